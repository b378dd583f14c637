// SASS of the default AdamW kernel (rounded split, default 8-bit states) with the default policy (R = 4), for sass_loop.py (tenth session):
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I include -cubin -o k.cubin sass_k.cu -Xptxas -v
//   cuobjdump -sass k.cubin > k.sass; python3 sass_loop.py k.sass
#include "flashoptim/device/step_plan.cuh"
using namespace flashoptim;
using cfg = step_config<rule::adamw, codec::rounded_split, bf16, codec::defaults::momentum, codec::defaults::second_moment>;
using pol = tuning::default_step_policy<cfg>::type;
static_assert(pol::warp_tiles == 4, "");
template __global__ void kernel::step_kernel<cfg, pol, false>(const __grid_constant__ kernel::step_params<cfg>);
