#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/codec/presets.hpp"
#include "flashoptim/rule/lion.hpp"
#include "flashoptim/rule/sgd.hpp"
using namespace flashoptim;
using cfg = step_config<rule::adamw, codec::ulp_correction<bf16, std::int8_t>, bf16, codec::reference::momentum, codec::reference::second_moment>;
using pol = tuning::default_step_policy<cfg>::type;
template __global__ void kernel::step_kernel<cfg, pol, false>(const __grid_constant__ kernel::step_params<cfg>);
