#!/usr/bin/python3
"""tests/bench/test_zoo.py — the zoo benchmark's own logic, without measuring anything.

The report's Zoo section (bench/report.py) is rendered from made-up results, and its verdicts checked: a
model slower than onnxruntime, one whose build timed out, one whose export failed, RSS over the limit,
an output off its tolerance, and the recurrent build scaling (linear, super-linear, timed out). The time
limit of bench/run.py's run_rusage must kill a build together with the processes it started (a linker).
"""
import json
import os
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import report  # noqa: E402
import run as bench  # noqa: E402


def model(name, flowc_ms, ort_ms, flowc_kib=1000, ort_net_kib=1000, diff=1e-6, tol=1e-4):
    times = {f"{r}/{t}": {"median_ms": ms / t, "min_ms": ms / t} for t in (1, 2)
             for r, ms in (("flowc", flowc_ms), ("ort", ort_ms))}
    return {"name": name, "what": f"{name} block", "flops": 10**9, "input": "1,3,8,8", "tolerance": tol,
            "compile_s": 1.0, "compile_cpu_s": 1.0, "exe_bytes": 2**20, "times": times, "load": 1.0,
            "max_abs_diff": {"flowc": diff, "ort": 1e-6},
            "memory": {"flowc_kib": flowc_kib, "ort_kib": ort_net_kib + 50000, "ort_net_kib": ort_net_kib},
            "profile": {"kernels": 12, "kernel_ms": 0.9,
                        "top": [{"kernel": "node '/features/features.1/block/block.0/block.0.0/Conv' (conv)",
                                 "share": 50.0, "us": 450.0},
                                {"kernel": "k1 matmul", "share": 30.0, "us": 270.0}]}}


def zoo(models, scaling):
    return {"argv": " --quick", "date": "2026-12-02 02:00 UTC", "seconds": 600.0, "git": "abc",
            "ort_version": "1.30.0", "load_start": 1.0, "load_end": 1.0,
            "cfg": {"rounds": 2, "seconds": 0.15, "build_timeout": 60.0}, "ort_baseline_kib": 50000,
            "machine": {"model": "test CPU", "cpus": "2"}, "flowc_version": "flowc 0", "build": "build",
            "node_version": "v20", "models": models, "scaling": scaling}


def steps(kind, times):
    out = []
    for n, t in zip((100, 250, 1000), times):
        e = {"name": f"{kind}_{n}", "kind": kind, "steps": n, "what": f"{kind} at {n} steps"}
        if t == "timeout":
            e.update(error="flowc timed out after 60 s", timed_out=True)
        elif t == "skip":
            e["skipped"] = "a shorter sequence already failed or timed out"
        else:
            e.update(compile_s=t, compile_cpu_s=t)
        out.append(e)
    return out


def render(data):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "RESULTS.md")
        report.write_zoo_only(path, data)
        with open(path) as f:
            return f.read()


def target(text, start):
    return next(line for line in text.splitlines() if line.startswith(start))


class ZooReport(unittest.TestCase):
    def test_all_met(self):
        text = render(zoo([model("a", 0.5, 1.0), model("b", 0.7, 1.0)], steps("gru", [1.0, 1.1, 1.3])))
        for start in ("- every zoo model", "- geometric mean", "- peak RSS", "- flowc's output",
                      "- a 1000-step", "- build time grows"):
            self.assertTrue(target(text, start).endswith("**MET**"), target(text, start))
        self.assertIn("| conv `…features.1/block/block.0/block.0.0/Conv` 50% | `k1 matmul` 30% |  |", text)

    def test_failures_are_not_met(self):
        timed_out = {"name": "c", "what": "c block", "error": "flowc timed out after 60 s", "timed_out": True}
        no_export = {"name": "d", "what": "d block", "error": "degenerate output", "export_failed": True}
        models = [model("a", 1.2, 1.0, flowc_kib=1300, diff=1e-2), model("b", 0.5, 1.0), timed_out, no_export]
        text = render(zoo(models, steps("gru", [1.0, 5.0, "timeout"]) + steps("lstm", ["timeout", "skip", "skip"])))
        ratio = target(text, "- every zoo model")
        self.assertIn("4 of 8 pairs measured (not built: c, d)", ratio)
        self.assertIn("a at 1 thread (1.20)", ratio)
        self.assertTrue(ratio.endswith("**NOT MET**"))
        self.assertIn("over on 1: a (1.30)", target(text, "- peak RSS"))
        self.assertIn("off on a", target(text, "- flowc's output"))
        self.assertIn("| c | c block | | | build timed out: flowc timed out after 60 s |", text)
        self.assertIn("export failed: degenerate output", text)
        long_line = target(text, "- a 1000-step")
        self.assertIn("gru timed out; lstm not attempted", long_line)
        self.assertTrue(long_line.endswith("**NOT MET**"))
        growth = target(text, "- build time grows")
        self.assertIn("100→250 steps ×5.00 (steps ×2.5)", growth)  # super-linear
        self.assertTrue(growth.endswith("**NOT MET**"))
        self.assertTrue(target(text, "- geometric mean").endswith("**NOT MET**"))  # incomplete

    def test_zoo_section_joins_the_main_report(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, report.ZOO_JSON), "w") as f:
                json.dump(zoo([model("a", 0.5, 1.0)], []), f)
            out = os.path.join(d, "RESULTS.md")
            report.render(out)  # no RESULTS.json: the zoo alone
            with open(out) as f:
                text = f.read()
        self.assertIn("## Zoo (issue 13)", text)
        self.assertIn("recurrent build-time scaling: not run", text)


def running(pid):
    """Whether pid exists and is not a zombie (killed, waiting for its new parent to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class BuildLimit(unittest.TestCase):
    def test_timeout_kills_the_process_group(self):
        with tempfile.TemporaryDirectory() as d:
            pidfile = os.path.join(d, "pid")
            # A "compiler" that starts a child (as flowc starts the linker) and outlives the limit.
            cmd = ["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"]
            t0 = time.monotonic()
            with self.assertRaises(bench.Timeout):
                bench.run_rusage(cmd, timeout=0.5)
            self.assertLess(time.monotonic() - t0, 30)
            with open(pidfile) as f:
                child = int(f.read())
            for _ in range(100):  # the kill is delivered asynchronously
                if not running(child):
                    break
                time.sleep(0.05)
            else:
                self.fail("the child of the timed-out command is still running")

    def test_within_the_limit(self):
        rc, wall, usage, err = bench.run_rusage(["sh", "-c", "echo oops >&2; exit 3"], timeout=30)
        self.assertEqual((rc, err.strip()), (3, "oops"))


if __name__ == "__main__":
    unittest.main()
