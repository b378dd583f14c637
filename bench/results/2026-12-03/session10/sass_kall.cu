// SASS of six layouts, each with R = 1 and R = 4 (the policies of ab_warp.cu), for sass_loop.py (tenth session):
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I include -cubin -o k.cubin sass_kall.cu -Xptxas -v
//   cuobjdump -sass k.cubin > k.sass; python3 sass_loop.py k.sass
#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/flashoptim.hpp"
using namespace flashoptim;
namespace c = flashoptim::codec;
using split8 = c::rounded_split;
using dm = c::defaults::momentum;
using dv = c::defaults::second_moment;
namespace p = c::precision;
using lion_default = step_config<rule::lion, split8, bf16, dm>;
using sgd_momentum = step_config<rule::sgd, split8, bf16, dm>;
using adamw_bf16_native = step_config<rule::adamw, c::native<bf16>, bf16, dm, dv>;
using adamw_fp16_ulp8 = step_config<rule::adamw, c::ulp_correction<fp16, std::int8_t>, fp16, dm, dv>;
using adamw_ulp16 = step_config<rule::adamw, c::ulp_correction<bf16, std::int16_t>, bf16, dm, dv>;
using adamw_fp8_states = step_config<rule::adamw, split8, bf16, p::fp8_momentum, p::fp8_second_moment>;
template <int S, int R>
using PW = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, S, false, R>;
#define I(cfg, S, R) template __global__ void kernel::step_kernel<cfg, PW<S, R>, false>(const __grid_constant__ kernel::step_params<cfg>);
I(lion_default,3,1) I(lion_default,3,4)
I(sgd_momentum,3,1) I(sgd_momentum,3,4)
I(adamw_bf16_native,3,1) I(adamw_bf16_native,3,4)
I(adamw_fp16_ulp8,3,1) I(adamw_fp16_ulp8,3,4)
I(adamw_ulp16,3,1) I(adamw_ulp16,3,4)
I(adamw_fp8_states,5,1) I(adamw_fp8_states,5,4)
