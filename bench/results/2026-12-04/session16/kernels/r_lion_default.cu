#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/codec/presets.hpp"
#include "flashoptim/rule/lion.hpp"
#include "flashoptim/rule/sgd.hpp"
using namespace flashoptim;
using cfg = step_config<rule::lion, codec::rounded_split, bf16, codec::defaults::momentum>;
using pol = tuning::default_step_policy<cfg>::type;
template __global__ void kernel::step_kernel<cfg, pol, false>(const __grid_constant__ kernel::step_params<cfg>);
