// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Everything that compiles with a plain C++ compiler and needs nothing beyond
// the standard library: formats, codecs, rules, layout (memory, shards,
// off-load split) and the CPU steps (serial reference, threaded SIMD).
// CUDA users add <flashoptim/device/...>; checkpoints are <flashoptim/io/...>.
#pragma once

#include "flashoptim/codec/bulk.hpp"
#include "flashoptim/codec/code.hpp"
#include "flashoptim/codec/compander.hpp"
#include "flashoptim/codec/master.hpp"
#include "flashoptim/codec/presets.hpp"
#include "flashoptim/codec/scale.hpp"
#include "flashoptim/codec/state.hpp"
#include "flashoptim/config.hpp"
#include "flashoptim/cpu/serial.hpp"
#include "flashoptim/cpu/step.hpp"
#include "flashoptim/format/bits.hpp"
#include "flashoptim/format/dtype.hpp"
#include "flashoptim/format/random.hpp"
#include "flashoptim/format/small_float.hpp"
#include "flashoptim/format/types.hpp"
#include "flashoptim/layout/bytes.hpp"
#include "flashoptim/layout/offload.hpp"
#include "flashoptim/layout/shard.hpp"
#include "flashoptim/layout/state_layout.hpp"
#include "flashoptim/rule/adam.hpp"
#include "flashoptim/rule/config.hpp"
#include "flashoptim/rule/erased.hpp"
#include "flashoptim/rule/lion.hpp"
#include "flashoptim/rule/scalars.hpp"
#include "flashoptim/rule/sgd.hpp"
#include "flashoptim/rule/step_args.hpp"
#include "flashoptim/rule/tensor.hpp"
#include "flashoptim/rule/tile.hpp"
#include "flashoptim/status.hpp"
#include "flashoptim/version.hpp"
