#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/codec/presets.hpp"
using namespace flashoptim;
using cfg = step_config<rule::adamw, codec::rounded_split, bf16, codec::defaults::momentum, codec::defaults::second_moment>;
using pol = tuning::with_tiny_attempt<tuning::default_step_policy<cfg>::type>;
template __global__ void kernel::step_kernel<cfg, pol, false>(const __grid_constant__ kernel::step_params<cfg>);
