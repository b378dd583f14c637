#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""Tests of tools/flashoptim_convert.py against files the C++ library wrote
(tools/io_testdata.cpp). Standard library only; the numeric check of the
reference dequantization runs when numpy is installed (Debian: python3-numpy).

  test_flashoptim_convert.py <path to io_testdata executable>
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flashoptim_convert as fc  # noqa: E402

GENERATOR = None


class ConvertTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="flashoptim_convert_")
        subprocess.run([GENERATOR, "write", cls.dir], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def path(self, leaf):
        return os.path.join(self.dir, leaf)

    def verify_in_cpp(self, kind, file, original):
        r = subprocess.run([GENERATOR, "verify", kind, file, original], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def strip_carried(self, ref):
        """A reference file as the reference itself would have it: no flashoptim metadata."""
        meta, tensors = fc.read_safetensors(ref)
        del meta["flashoptim"]
        stripped = ref + ".stripped"
        fc.write_atomic(stripped, fc.serialize(meta, tensors))
        return stripped

    def round_trip(self, leaf, kind, rule, step=None):
        src = self.path(leaf)
        ref = src + ".ref"
        back = src + ".back"
        fc.to_reference(src, ref)
        fc.from_reference(ref, back)
        with open(src, "rb") as a, open(back, "rb") as b:
            self.assertEqual(a.read(), b.read(), "the round trip is byte-identical")
        derived = src + ".derived"
        fc.from_reference(self.strip_carried(ref), derived, rule=rule, step=step)
        self.verify_in_cpp(kind, derived, src)
        return ref

    def test_reads_what_cpp_writes(self):
        meta, tensors = fc.read_checkpoint(self.path("ref_adamw.safetensors"))
        self.assertEqual(meta["rule"], "adamw")
        self.assertEqual(meta["master"], "ulp_correction<bf16,int8>")
        self.assertEqual(json.loads(meta["tensors"]), ["embed.weight", "layers.0.mlp.weight", "norm.bias"])
        self.assertEqual(tensors["embed.weight::exp_avg::quantized"].dtype, "I8")
        self.assertEqual(tensors["embed.weight::exp_avg_sq::quantized"].dtype, "U8")
        self.assertEqual(tensors["embed.weight::exp_avg::scales"].dtype, "F16")
        self.assertEqual(tensors["embed.weight::exp_avg::scales"].shape, [2])
        self.assertEqual(tensors["embed.weight::error_bits"].dtype, "I8")
        self.assertEqual(tensors["layers.0.mlp.weight"].dtype, "BF16")

    def test_adamw_reference_layout(self):
        ref = self.round_trip("ref_adamw.safetensors", "ref_adamw", "adamw")
        meta, tensors = fc.read_safetensors(ref)
        self.assertEqual(set(k for k in tensors if k.startswith("state.0.")),
                         {"state.0.exp_avg::quantized", "state.0.exp_avg::scales", "state.0.exp_avg_sq::quantized",
                          "state.0.exp_avg_sq::scales", "state.0.error_bits", "state.0.step"})
        self.assertEqual(struct.unpack("<q", tensors["state.1.step"].data)[0], 3)
        group = json.loads(meta["param_groups"])[0]
        self.assertEqual(group["betas"], [0.9, 0.999])
        self.assertEqual(group["master_bytewidth"], 3)
        self.assertTrue(group["quantize"])
        self.assertEqual(group["params"], [0, 1, 2])

    def test_sgd_and_lion(self):
        self.round_trip("ref_sgd.safetensors", "ref_sgd", "sgd", step=3)
        ref = self.round_trip("plain_lion.safetensors", "plain_lion", "lion", step=3)
        _, tensors = fc.read_safetensors(ref)
        self.assertEqual(tensors["state.2.exp_avg"].dtype, "F32")
        self.assertEqual(tensors["state.2.error_bits"].dtype, "I16")

    def test_fp32_and_state16_forms(self):
        ref = self.round_trip("def_adamw_fp32.safetensors", "def_adamw", "adamw")
        _, tensors = fc.read_safetensors(ref)
        self.assertEqual(tensors["model.embed.weight"].dtype, "F32")
        self.assertEqual(tensors["state.0.exp_avg_sq"].dtype, "F32")
        src, ref16 = self.path("def_adamw_state16.safetensors"), self.path("s16.ref")
        fc.to_reference(src, ref16)
        fc.from_reference(ref16, self.path("s16.back"))
        self.verify_in_cpp("def_adamw", self.path("s16.back"), src)

    def test_non_reference_codecs_are_refused(self):
        with self.assertRaisesRegex(ValueError, "fp32"):
            fc.to_reference(self.path("def_adamw.safetensors"), self.path("refused"))
        self.assertFalse(os.path.exists(self.path("refused")))

    def test_corruption_is_detected(self):
        src = self.path("ref_adamw.safetensors")
        with open(src, "rb") as f:
            blob = bytearray(f.read())
        for offset in (len(blob) - 1, 40):
            bad = bytearray(blob)
            bad[offset] ^= 0x10
            path = self.path(f"bad{offset}")
            with open(path, "wb") as f:
                f.write(bad)
            with self.assertRaises(ValueError):
                fc.read_checkpoint(path)
        with open(self.path("short"), "wb") as f:
            f.write(blob[: len(blob) // 2])
        with self.assertRaises(ValueError):
            fc.read_checkpoint(self.path("short"))
        self.assertEqual(fc.main(["info", self.path("short")]), 1)

    def test_reference_dequantization_matches_cpp_export(self):
        """The reference's dequantize formula (Triton kernel, in float32) applied
        to the exported codes and fp16 scales gives exactly the C++ fp32 export."""
        try:
            import numpy as np
        except ImportError:
            self.skipTest("numpy not installed")
        _, packed = fc.read_checkpoint(self.path("ref_adamw.safetensors"))
        _, wide = fc.read_checkpoint(self.path("ref_adamw_fp32.safetensors"))
        f32 = np.float32
        for name in ("embed.weight", "layers.0.mlp.weight", "norm.bias"):
            n = packed[name].shape[0]
            q = packed[f"{name}::exp_avg::quantized"].numpy().astype(f32)
            s = np.repeat(packed[f"{name}::exp_avg::scales"].numpy().astype(f32), 32)[:n]
            y = q / f32(127)
            m = (y / (f32(2) - np.abs(y))) * s
            self.assertTrue(np.array_equal(m.view(np.uint32), wide[f"{name}::exp_avg"].numpy().view(np.uint32)))
            q = packed[f"{name}::exp_avg_sq::quantized"].numpy().astype(f32)
            s = np.repeat(packed[f"{name}::exp_avg_sq::scales"].numpy().astype(f32), 32)[:n]
            r = (q / f32(255)) * s
            self.assertTrue(np.array_equal((r * r).view(np.uint32),
                                           wide[f"{name}::exp_avg_sq"].numpy().view(np.uint32)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_flashoptim_convert.py <io_testdata executable>")
    GENERATOR = sys.argv.pop(1)
    unittest.main(verbosity=2)
