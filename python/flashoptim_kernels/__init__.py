# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""flashoptim kernels for Python: torch.optim classes (FlashAdamW, FlashAdam,
FlashSGD, FlashSGDW, FlashLion) on the library's fused optimizer step, and the
numpy-facing layer under them (make, Optimizer). torch is imported only when a
torch class is used: the module imports, and its numpy layer works, without it.
"""
from ._core import FlashoptimError, Optimizer, configurations, decode_states, encode_states, has_cuda, make  # noqa: F401
from ._core import __version__  # noqa: F401
from .config import config_name  # noqa: F401

_TORCH_CLASSES = ("FlashAdamW", "FlashAdam", "FlashSGD", "FlashSGDW", "FlashLion", "cast_model")


def __getattr__(name):
    # torch loads on first use of a torch class, not on import
    if name in _TORCH_CLASSES:
        from . import optim

        return getattr(optim, name)
    raise AttributeError(f"module 'flashoptim_kernels' has no attribute {name!r}")


__all__ = ["FlashoptimError", "Optimizer", "configurations", "config_name", "decode_states", "encode_states", "has_cuda",
           "make", *_TORCH_CLASSES]
