#!/usr/bin/python3
"""tests/bench/test_sbp.py — the distribution benchmark's report logic, without measuring anything.

bench/report_sbp.py renders the "Distribution (issue 15)" section from made-up SBP.json data; its table and
verdicts are checked: speed-ups over the 1-thread program, issue 15's tensor target (≥ 1.6× over 1 thread
and no slower than 2 threads) met, missed on speed, and missed against 2 threads while fast enough.
"""
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import report_sbp  # noqa: E402


def model(name, one, two, data, tensor):
    progs = [{"label": "1 thread", "median_ms": one}, {"label": "2 threads", "median_ms": two},
             {"label": "2 ranks data", "median_ms": data, "comm_ms": 0.1, "max_abs_diff": 0.0},
             {"label": "2 ranks tensor", "median_ms": tensor, "comm_ms": 0.2, "max_abs_diff": 3e-6}]
    return {"name": name, "what": name, "runs_per_batch": 10, "load": 0.5, "programs": progs}


def render(models):
    d = {"argv": " --quick", "date": "2026-12-02 10:00 UTC", "seconds": 30.0, "git": "abc", "mpirun": "Open MPI 4.1.4",
         "load_start": 0.5, "load_end": 0.6, "ranks": 2, "cfg": {"rounds": 2, "seconds": 0.2}, "models": models}
    lines = []
    report_sbp.section_sbp(lines.append, d)
    return "\n".join(lines)


class SbpReport(unittest.TestCase):
    def test_table_and_verdicts(self):
        text = render([model("met", 2.0, 1.1, 1.0, 1.0), model("slow", 2.0, 1.1, 1.0, 1.5),
                       model("behind_two", 2.0, 1.0, 1.0, 1.2)])
        self.assertIn("| met | 2 ranks tensor | 1.00 | 2.00 | 0.200 | 3.0e-06 |", text)
        self.assertIn("| met | 1 thread | 2.00 | 1.00 | — | — |", text)
        self.assertRegex(text, r"- met: .* 2\.00×, 0\.91× the 2-thread time — \*\*MET\*\*")
        self.assertRegex(text, r"- slow: .* 1\.33×, 1\.36× the 2-thread time — \*\*NOT MET\*\*")
        # 1.67× over one thread, but 1.2 ms against 1.0 ms at 2 threads
        self.assertRegex(text, r"- behind_two: .* 1\.67×, 1\.20× the 2-thread time — \*\*NOT MET\*\*")


if __name__ == "__main__":
    unittest.main()
