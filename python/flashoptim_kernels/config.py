# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""The paper implementation's constructor arguments -> a compiled configuration
name ("rule/master/states"; docs/python.md lists them). No torch here."""

_RULES = ("adamw", "adam", "sgd", "sgdw", "lion")


def config_name(rule, param_dtype, master_weight_bits=24, quantize=True, momentum=None):
    """The configuration for `rule` over parameters of `param_dtype`
    ("bfloat16" or "float32"):

    - bfloat16 params: master_weight_bits 24 -> "bf16+int8" (bf16 + int8: the
      fp32 weight rounded to 24 bits, codec::rounded_split; 0.2.0 kept the
      paper's ULP correction), 32 -> "bf16+fp32" (fp32 master copy); states 8-bit
      (quantize=True). None (pure bf16) and unquantized states are not compiled.
    - float32 params: "fp32" (no correction: master_weight_bits must be None or
      is ignored as the paper's package does for fp32 params), fp32 states;
      quantize is ignored (8-bit states over fp32 params are not compiled).
    - SGD/SGDW with momentum 0 keep no state: ".../none".
    """
    if rule not in _RULES:
        raise ValueError(f"rule {rule!r} is not one of {_RULES}")
    if param_dtype == "bfloat16":
        if master_weight_bits == 24:
            master = "bf16+int8"
        elif master_weight_bits == 32:
            master = "bf16+fp32"
        elif master_weight_bits is None:
            raise ValueError("master_weight_bits=None with bfloat16 parameters (pure bf16 weights) is not a compiled "
                             "configuration of flashoptim_kernels; use 24 (int8 correction) or 32 (fp32 master)")
        else:
            raise ValueError(f"master_weight_bits must be None, 24 or 32, not {master_weight_bits!r}")
        if not quantize:
            raise ValueError("quantize=False (fp32 states) with bfloat16 parameters is not a compiled configuration "
                             "of flashoptim_kernels")
        states = "8bit"
    elif param_dtype == "float32":
        if master_weight_bits not in (None, 24, 32):
            raise ValueError(f"master_weight_bits must be None, 24 or 32, not {master_weight_bits!r}")
        master, states = "fp32", "fp32"
    else:
        raise TypeError(f"parameter dtype {param_dtype} is not supported (bfloat16 or float32)")
    if rule in ("sgd", "sgdw") and not momentum:
        states = "none"
    return f"{rule}/{master}/{states}"
