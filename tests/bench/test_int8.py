#!/usr/bin/python3
"""tests/bench/test_int8.py — the quantisation benchmark's report logic, without measuring anything.

bench/report_int8.py renders the "Quantisation" section from made-up INT8.json data; its tables and
verdicts are checked: speed-ups of the int8 builds over the f32 ones against each model's target, flowc
against onnxruntime on the QDQ file, artefact sizes, accuracy in output quantisation steps, a model beyond
the targets (reported, not judged), a model whose QDQ build failed (its cells shown as —, its targets NOT
MET, the error listed), the --quantize int8 --calibrate table and the AVX2 peak's ratio to f32 FMA on ymm.
"""
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import report  # noqa: E402
import report_int8  # noqa: E402


def times(**ms):
    """runner=ms at 1 thread (2 threads: half)."""
    return {f"{r}/{t}": {"median_ms": v / t, "min_ms": v / t} for r, v in ms.items() for t in (1, 2)}


def qdq(name, f32, int8, ort, torch, steps=1.0, step=0.05, f32_mib=40, int8_mib=10):
    return {"name": name, "what": name, "flops": 2 * 10**9, "input": "1,3,8,8", "step": step, "load": 0.5,
            "times": times(flowc_f32=f32, flowc_int8=int8, ort=ort, torch=torch),
            "max_abs_diff": {"flowc_f32": 1e-6, "flowc_int8": steps * step, "ort": 3 * step, "torch": 0.0},
            "max_steps": {"flowc_int8": steps, "ort": 3.0, "torch": 0.0},
            "flowc_f32_exe_bytes": f32_mib * 2**20, "flowc_int8_exe_bytes": int8_mib * 2**20}


def dynamic(name, f32, int8):
    return {"name": name, "what": name, "flops": 10**9, "input": "64,784", "load": 0.5,
            "times": times(flowc_f32=f32, flowc_int8=int8), "max_abs_diff": {"flowc_f32": 1e-6, "flowc_int8": 1e-2},
            "flowc_f32_exe_bytes": 8 * 2**20, "flowc_int8_exe_bytes": 2 * 2**20}


def data(qdq_results, dyn_results):
    return {"argv": " --quick", "date": "2026-12-02 10:00 UTC", "seconds": 120.0, "git": "abc", "ort_version": "1.30.0",
            "torch_version": "1.13", "load_start": 0.5, "load_end": 0.5, "cfg": {"rounds": 2, "seconds": 0.2},
            "cpu": "x86-64-v3", "machine": {"model": "test CPU", "cpus": "2"}, "flowc_version": "flowc 0",
            "build": "build", "node_version": "v20",
            "peak": {"gflops_1t": 100.0, "gflops_2t": 200.0, "isa": "avx2+fma"},
            "int8_peak": {"avx2_1t": 200.0, "avx2_2t": 400.0, "vnni": False},
            "qdq": qdq_results, "dynamic": dyn_results}


def render(d):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "RESULTS.md")
        report.write_zoo_only(path, None, d)
        with open(path) as f:
            return f.read()


def line(text, start):
    return next(x for x in text.splitlines() if x.startswith(start))


class Int8Report(unittest.TestCase):
    def test_all_met(self):
        text = render(data([qdq("qdq_resnet18", 30.0, 20.0, 40.0, 50.0), qdq("qdq_mobilenet_v2", 10.0, 6.0, 12.0, 20.0)],
                           [dynamic("mlp_b64", 2.0, 1.0)]))
        for start in ("- qdq_resnet18: flowc's QDQ build", "- qdq_mobilenet_v2: flowc's QDQ build",
                      "- mlp_b64: flowc's int8-dynamic", "- qdq_resnet18: flowc ≤ 0.6", "- int8 artefacts",
                      "- QDQ models within 4"):
            self.assertTrue(line(text, start).endswith("**MET**"), line(text, start))
        self.assertIn("1.50×", line(text, "- qdq_resnet18: flowc's QDQ build"))
        self.assertIn("0.50", line(text, "- qdq_resnet18: flowc ≤ 0.6"))
        # ResNet-18 at 1 thread: 2 GOP in 20 ms = 100 GOP/s, half the 200 GOP/s AVX2 int8 peak.
        self.assertIn("| 100.0 (50%) |", line(text, "| qdq_resnet18 | 2.00 | 1 |"))
        self.assertIn("with `--cpu x86-64-v3`", text)
        self.assertIn("this CPU has no VNNI", text)
        self.assertNotIn("AMX", text)

    def test_amx_peak(self):
        d = data([qdq("qdq_resnet18", 30.0, 20.0, 40.0, 50.0)], [])
        d["int8_peak"].update({"vnni": True, "vnni_1t": 470.0, "vnni_2t": 940.0, "amx": True, "amx_1t": 6900.0,
                               "amx_2t": 13700.0})
        text = render(d)
        self.assertIn("with AMX tiles (tdpbusd, 2 x 2 tiles as flowc's tile kernels block them) 6900.0 on 1 thread, "
                      "13700.0 on 2", text)
        # the % column stays against the AVX2 peak, as issue 14 asks
        self.assertIn("| 100.0 (50%) |", line(text, "| qdq_resnet18 | 2.00 | 1 |"))

    def test_targets_not_met(self):
        text = render(data([qdq("qdq_resnet18", 30.0, 25.0, 40.0, 50.0, steps=5.0, int8_mib=20)],
                           [dynamic("transformer", 2.0, 1.5)]))
        for start in ("- qdq_resnet18: flowc's QDQ build", "- transformer: flowc's int8-dynamic",
                      "- qdq_resnet18: flowc ≤ 0.6", "- int8 artefacts", "- QDQ models within 4"):
            self.assertTrue(line(text, start).endswith("**NOT MET**"), line(text, start))
        self.assertIn("qdq_resnet18 5.00", line(text, "- QDQ models within 4"))

    def test_beyond_targets(self):
        """A QDQ model without a target is reported beside the targets, never in their verdicts."""
        text = render(data([qdq("qdq_resnet18", 30.0, 20.0, 40.0, 50.0),
                            qdq("qdq_resnet50", 60.0, 12.0, 24.0, 50.0, steps=5.0, int8_mib=30)], []))
        self.assertNotIn("qdq_resnet50", line(text, "- QDQ models within 4"))
        self.assertNotIn("qdq_resnet50", line(text, "- int8 artefacts"))
        self.assertTrue(line(text, "- QDQ models within 4").endswith("**MET**"))
        self.assertFalse(any(x.startswith("- qdq_resnet50") for x in text.splitlines()))
        self.assertEqual(line(text, "Beyond the targets"),
                         "Beyond the targets (models flowc was not tuned on; 1 thread): qdq_resnet50 QDQ 5.00× faster "
                         "than f32, 0.50× onnxruntime's time, 5 steps from PyTorch int8 (onnxruntime 3), size 0.75×.")

    def test_static_section_and_ymm_peak(self):
        """--quantize int8 --calibrate models get their own table (no verdict), and the f32 FMA peak on ymm, where
        the run measured it, gives the AVX2 int8 peak's like-for-like ratio."""
        d = data([qdq("qdq_resnet18", 30.0, 20.0, 40.0, 50.0)], [])
        d["static"] = [dynamic("efficientnet_b0", 12.0, 8.0)]
        d["int8_peak"]["fma_1t"] = 125.0
        text = render(d)
        self.assertIn("### `--quantize int8 --calibrate` (f32 models, no target)", text)
        self.assertIn("| 12.00 | 8.00 | 1.50 |", line(text, "| efficientnet_b0 | 1 |"))
        self.assertFalse(any(x.startswith("- efficientnet_b0") for x in text.splitlines()))
        self.assertIn("(125.0 GFLOP/s on 1 thread, the f32 peak of an AVX2 build) it is 1.60×", text)
        del d["static"], d["int8_peak"]["fma_1t"]
        text = render(d)  # a run from before either: neither is shown
        self.assertNotIn("--calibrate` (f32 models", text)
        self.assertNotIn("256-bit registers", text)

    def test_failed_build(self):
        failed = {"name": "qdq_mobilenet_v2", "what": "m", "flops": 10**9, "input": "1,3,8,8", "step": 0.05,
                  "build_errors": {"flowc_int8": "flowc build exited with status 1: unsupported op"}}
        text = render(data([failed], []))
        self.assertIn("failed: flowc build exited with status 1: unsupported op |", line(text, "| qdq_mobilenet_v2 |"))
        self.assertIn("- qdq_mobilenet_v2, flowc QDQ: `flowc build exited with status 1: unsupported op`", text)
        self.assertTrue(line(text, "- qdq_mobilenet_v2: flowc's QDQ build").endswith("not measured — **NOT MET**"))
        self.assertTrue(line(text, "- QDQ models within 4").endswith("**NOT MET**"))

    def test_cpu_sections(self):
        """A default run (INT8.json) and a --cpu run (INT8.<cpu>.json) beside the report: two sections."""
        self.assertEqual(report_int8.raw_name(None), "INT8.json")
        self.assertEqual(report_int8.raw_name("x86-64-v3,icelake-server"), "INT8.x86-64-v3+icelake-server.json")
        default = data([qdq("qdq_resnet18", 30.0, 20.0, 40.0, 50.0)], [])
        default["cpu"] = None
        avx2 = data([qdq("qdq_resnet18", 30.0, 45.0, 40.0, 50.0)], [])
        with tempfile.TemporaryDirectory() as tmp:
            for name, d in (("INT8.json", default), ("INT8.x86-64-v3.json", avx2)):
                with open(os.path.join(tmp, name), "w") as f:
                    json.dump(d, f)
            path = os.path.join(tmp, "RESULTS.md")
            report.render(path)
            with open(path) as f:
                text = f.read()
        heads = [x for x in text.splitlines() if x.startswith("## Quantisation")]
        self.assertEqual(heads, ["## Quantisation (issue 14)", "## Quantisation (issue 14), `--cpu x86-64-v3`"])
        self.assertIn("raw data in INT8.x86-64-v3.json", text)
        verdicts = [x for x in text.splitlines() if x.startswith("- qdq_resnet18: flowc's QDQ build")]
        self.assertEqual([v.endswith("**MET**") for v in verdicts], [True, False])


if __name__ == "__main__":
    unittest.main()
