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

    def forged(self, leaf, edit):
        """A copy of a C++-written checkpoint with edited metadata and a valid header checksum."""
        meta, tensors = fc.read_safetensors(self.path(leaf))
        edit(meta)
        _, entries = fc.plan(tensors)
        meta["header_crc32"] = f"{fc.header_checksum(meta, entries):08x}"
        out = self.path(leaf + ".forged")
        fc.write_atomic(out, fc.serialize(meta, tensors))
        return out

    def test_versions_and_rules_without_a_reference_counterpart(self):
        # version 1 files (library 0.1) still read; unknown versions refused
        fc.read_checkpoint(self.forged("ref_adamw.safetensors", lambda m: m.update(format_version="1")))
        with self.assertRaisesRegex(ValueError, "format version"):
            fc.read_checkpoint(self.forged("ref_adamw.safetensors", lambda m: m.update(format_version="4")))
        # version 3 is read (test_parameter_groups); a version-2 file relabelled 3 has no groups
        with self.assertRaisesRegex(ValueError, "version-3"):
            fc.read_checkpoint(self.forged("ref_adamw.safetensors", lambda m: m.update(format_version="3")))
        # AMSGrad's max_exp_avg_sq and maximize have no place in the paper's state dict
        amsgrad = self.forged("ref_adamw.safetensors", lambda m: m.update(rule="adamw_amsgrad"))
        with self.assertRaisesRegex(ValueError, "max_exp_avg_sq"):
            fc.to_reference(amsgrad, self.path("refused_amsgrad"))
        self.assertFalse(os.path.exists(self.path("refused_amsgrad")))

        def maximize(m):
            h = json.loads(m["hyper"])
            h["maximize"] = True
            m["hyper"] = json.dumps(h, sort_keys=True, separators=(",", ":"))
        with self.assertRaisesRegex(ValueError, "maximize"):
            fc.to_reference(self.forged("ref_adamw.safetensors", maximize), self.path("refused_maximize"))

    def test_parameter_groups(self):
        """A version-3 file (io::save_optimizer, two groups) converts to torch-style
        param_groups and back, byte for byte, and from a reference file alone."""
        src = self.path("grp_adamw.safetensors")
        meta, _ = fc.read_checkpoint(src)
        self.assertEqual(meta["format_version"], "3")
        self.assertNotIn("hyper", meta)
        self.assertEqual(json.loads(meta["tensor_groups"]), [0, 1, 0])
        ref = self.round_trip("grp_adamw.safetensors", "grp_ref_adamw", "adamw")
        rmeta, _ = fc.read_safetensors(ref)
        groups = json.loads(rmeta["param_groups"])
        self.assertEqual([g["params"] for g in groups], [[0, 2], [1]])
        self.assertEqual([g["weight_decay"] for g in groups], [0.0, 0.1])
        for g in groups:
            self.assertEqual(g["betas"], [0.9, 0.999])
            self.assertEqual(g["lr"], 0.01)
            self.assertEqual(g["master_bytewidth"], 3)
            self.assertTrue(g["quantize"])
        # Derived from the reference file alone: the groups come back (round_trip
        # proved it loads in C++ through load_optimizer and equals the original).
        dmeta, _ = fc.read_checkpoint(src + ".derived")
        self.assertEqual(dmeta["format_version"], "3")
        self.assertEqual(json.loads(dmeta["tensor_groups"]), [0, 1, 0])
        self.assertEqual([h["weight_decay"] for h in json.loads(dmeta["param_groups"])], [0.0, 0.1])

        stripped = self.strip_carried(ref)
        smeta, stensors = fc.read_safetensors(stripped)

        def with_params(params, leaf):
            g = json.loads(smeta["param_groups"])
            for group, p in zip(g, params):
                group["params"] = p
            path = self.path(leaf)
            fc.write_atomic(path, fc.serialize(dict(smeta, param_groups=json.dumps(g)), stensors))
            return path
        with self.assertRaisesRegex(ValueError, "param_groups 0 and 1"):
            fc.from_reference(with_params([[0, 2], [1, 2]], "twice.ref"), self.path("refused_groups"), rule="adamw")
        with self.assertRaisesRegex(ValueError, "no parameter group"):
            fc.from_reference(with_params([[0], [1]], "none.ref"), self.path("refused_groups"), rule="adamw")
        with self.assertRaisesRegex(ValueError, "parameter index"):
            fc.from_reference(with_params([[0, 3], [1]], "range.ref"), self.path("refused_groups"), rule="adamw")
        self.assertFalse(os.path.exists(self.path("refused_groups")))

        # Malformed groups metadata is refused by the reader.
        for edit in ({"tensor_groups": "[0,1,2]"}, {"tensor_groups": "[0,1]"}, {"tensor_groups": "[0,true,0]"},
                     {"param_groups": "[]"}, {"hyper": "{}"}):
            with self.assertRaises(ValueError, msg=str(edit)):
                fc.read_checkpoint(self.forged("grp_adamw.safetensors", lambda m: m.update(edit)))
        with self.assertRaisesRegex(ValueError, "parameter groups in a version-2 file"):
            fc.read_checkpoint(self.forged("ref_adamw.safetensors", lambda m: m.update(tensor_groups="[0,0,0]")))

        def maximize_one(m):
            g = json.loads(m["param_groups"])
            g[1]["maximize"] = True
            m["param_groups"] = json.dumps(g)
        with self.assertRaisesRegex(ValueError, "maximize"):
            fc.to_reference(self.forged("grp_adamw.safetensors", maximize_one), self.path("refused_maximize"))

    def test_reference_groups_that_agree_give_one_hyperparameter_set(self):
        """Several reference groups with equal hyperparameters: a version-2 file, as before."""
        ref = self.path("ref_adamw.safetensors.groups")
        fc.to_reference(self.path("ref_adamw.safetensors"), ref)
        meta, tensors = fc.read_safetensors(self.strip_carried(ref))
        g = json.loads(meta["param_groups"])[0]
        meta["param_groups"] = json.dumps([dict(g, params=[0, 2]), dict(g, params=[1])])
        split = self.path("split.ref")
        fc.write_atomic(split, fc.serialize(meta, tensors))
        fc.from_reference(split, self.path("split.back"), rule="adamw")
        back, _ = fc.read_checkpoint(self.path("split.back"))
        self.assertEqual(back["format_version"], "2")
        self.assertNotIn("param_groups", back)
        self.verify_in_cpp("ref_adamw", self.path("split.back"), self.path("ref_adamw.safetensors"))

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

    def test_special_files_are_refused_at_once(self):
        """A FIFO as the file to read is refused, never waited on (a regression
        would block in open(); the child process is killed after a timeout)."""
        fifo = self.path("fifo")
        os.mkfifo(fifo)
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import flashoptim_convert as fc; "
                "sys.exit(fc.main(['info', sys.argv[2]]))")
        r = subprocess.run([sys.executable, "-c", code, os.path.dirname(os.path.abspath(fc.__file__)), fifo],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertIn("is a FIFO, not a regular file", r.stderr)
        with self.assertRaisesRegex(ValueError, "is a directory, not a regular file"):
            fc.read_safetensors(self.dir)
        with self.assertRaisesRegex(ValueError, "is a character device"):
            fc.read_safetensors("/dev/null")
        # Writing over a FIFO or a directory: refused, nothing replaced, no temporary left.
        src = self.path("ref_adamw.safetensors")
        sub = self.path("subdir")
        os.mkdir(sub)
        before = sorted(os.listdir(self.dir))
        for dst in (fifo, sub):
            with self.assertRaisesRegex(ValueError, "not a regular file"):
                fc.to_reference(src, dst)
        self.assertTrue(os.path.isdir(sub))
        self.assertTrue(os.path.exists(fifo) and not os.path.isfile(fifo))
        self.assertEqual(sorted(os.listdir(self.dir)), before)
        os.unlink(fifo)
        os.rmdir(sub)

    def test_malformed_entries_and_steps_are_refused(self):
        src = self.path("ref_adamw.safetensors")
        meta, tensors = fc.read_safetensors(src)
        blob = fc.serialize(meta, tensors)
        (n,) = struct.unpack("<Q", blob[:8])
        header = json.loads(blob[8:8 + n])
        name = "norm.bias"
        for field, value in (("shape", 5), ("data_offsets", 7), ("data_offsets", [0]), ("data_offsets", [True, 2])):
            bad = json.loads(json.dumps(header))
            bad[name][field] = value
            text = json.dumps(bad).encode()
            path = self.path("malformed")
            with open(path, "wb") as f:
                f.write(struct.pack("<Q", len(text)) + text + blob[8 + n:])
            with self.assertRaises(ValueError, msg=f"{field}={value!r}"):
                fc.read_safetensors(path)
        # A reference file whose step is negative, not an int64, or leaves no next step.
        ref = self.path("ref_adamw.safetensors.steps")
        fc.to_reference(src, ref)
        rmeta, rtensors = fc.read_safetensors(ref)
        for step in (fc.Tensor("I64", [], struct.pack("<q", -1)), fc.Tensor("I32", [], struct.pack("<i", 3)),
                     fc.Tensor("I64", [], struct.pack("<q", 2**63 - 1))):
            t = {k: (step if k.endswith(".step") else v) for k, v in rtensors.items()}
            bad = self.path("bad_step.ref")
            fc.write_atomic(bad, fc.serialize(rmeta, t))
            with self.assertRaisesRegex(ValueError, "step"):
                fc.from_reference(bad, self.path("bad_step.back"))
            self.assertFalse(os.path.exists(self.path("bad_step.back")))
        # SGD's state has no step: it comes from --step.
        sgd_ref = self.path("ref_sgd.safetensors.steps")
        fc.to_reference(self.path("ref_sgd.safetensors"), sgd_ref)
        with self.assertRaisesRegex(ValueError, "step -2"):
            fc.from_reference(self.strip_carried(sgd_ref), self.path("bad_step.back"), rule="sgd", step=-2)
        self.assertFalse(os.path.exists(self.path("bad_step.back")))

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
