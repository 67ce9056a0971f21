#!/usr/bin/python3
"""tests/bench/test_sbp.py — the distribution benchmark's report logic, without measuring anything.

bench/report_sbp.py renders the "Distribution (issue 15)" section from made-up SBP.json data; its table and
verdicts are checked: speed-ups over the 1- and 2-thread programs, issue 15's tensor target (≥ 1.6× over 1 thread
and no slower than 2 threads) met, missed on speed, and missed against 2 threads while fast enough; the cost
model's predictions beside the measured times (within 25% or not, per model and ranks, at the edges too);
auto's prediction against data's and tensor's (met, and not met); 4 ranks on 2 cores marked oversubscribed
and left out of the speed target; and an SBP.json from before predictions (one "ranks" number) still renders.
"""
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import report_sbp  # noqa: E402


def pred(ms, comm=0.1):
    return {"ms": ms, "compute_ms": ms - comm, "comm_ms": comm}


def model(name, one, two, measured, predicted=None, auto_pred=None):
    """measured / predicted: {ranks: (data, tensor, auto) ms}; auto_pred: {ranks: auto's predicted ms} where it
    differs from the auto program's own line (the search's plan against data's and tensor's)."""
    progs = [{"label": "1 thread", "ranks": None, "sbp": None, "median_ms": one, "rounds_ms": [one] * 2},
             {"label": "2 threads", "ranks": None, "sbp": None, "median_ms": two, "rounds_ms": [two] * 2}]
    predictions = {}
    for n, times in measured.items():
        for s, ms in zip(report_sbp.STRATEGIES, times):
            p = {"label": f"{n} ranks {s}", "ranks": n, "sbp": s, "median_ms": ms, "rounds_ms": [ms] * (2 if n == 2 else 1),
                 "comm_ms": 0.2, "max_abs_diff": 3e-6}
            if predicted:
                p["predicted"] = pred(predicted[n][report_sbp.STRATEGIES.index(s)])
            progs.append(p)
        if predicted:
            d, t, a = predicted[n]
            predictions[str(n)] = {"data": pred(d), "tensor": pred(t),
                                   "auto": dict(pred((auto_pred or {}).get(n, a)), taken="the search's plan"),
                                   "host": "per rank and run on this host (avx512, 2 ranks on 2 cores)"}
    return {"name": name, "what": name, "runs_per_batch": 10, "load": 0.5, "programs": progs,
            "predictions": predictions}


def render(models, ranks=(2,), cores=2):
    d = {"argv": " --quick", "date": "2026-12-02 10:00 UTC", "seconds": 30.0, "git": "abc", "mpirun": "Open MPI 4.1.4",
         "load_start": 0.5, "load_end": 0.6, "ranks": list(ranks), "cores": cores, "cfg": {"rounds": 2, "seconds": 0.2},
         "models": models}
    lines = []
    report_sbp.section_sbp(lines.append, d)
    return "\n".join(lines)


class SbpReport(unittest.TestCase):
    def test_tensor_speed_target(self):
        text = render([model("met", 2.0, 1.1, {2: (1.0, 1.0, 1.0)}), model("slow", 2.0, 1.1, {2: (1.0, 1.5, 1.0)}),
                       model("behind_two", 2.0, 1.0, {2: (1.0, 1.2, 1.0)})])
        self.assertIn("| met | 2 ranks tensor | 2 | 1.00 | 2.00 / 1.10 | — | — | 0.200 | 3.0e-06 |", text)
        self.assertIn("| met | 1 thread | 2 | 2.00 | 1.00 / 0.55 | — | — | — | — |", text)
        self.assertRegex(text, r"- met: .* 2\.00×, 0\.91× the 2-thread time — \*\*MET\*\*")
        self.assertRegex(text, r"- slow: .* 1\.33×, 1\.36× the 2-thread time — \*\*NOT MET\*\*")
        # 1.67× over one thread, but 1.2 ms against 1.0 ms at 2 threads
        self.assertRegex(text, r"- behind_two: .* 1\.67×, 1\.20× the 2-thread time — \*\*NOT MET\*\*")
        self.assertNotIn("prediction", text.split("### Distribution targets")[1])  # none recorded, none judged

    def test_predictions_within_25_percent(self):
        # 0.8 / 1.0 and 1.25 / 1.0 sit on the edges (25% of the measured time); 1.26 does not
        text = render([model("close", 2.0, 1.1, {2: (1.0, 1.0, 1.0)}, {2: (0.8, 1.25, 0.8)}),
                       model("far", 2.0, 1.1, {2: (1.0, 1.0, 1.0)}, {2: (1.0, 1.26, 1.0)})])
        self.assertIn("| close | 2 ranks tensor | 2 | 1.00 | 2.00 / 1.10 | 1.25 (1.150 + 0.100) | 0.80 | 0.200 | 3.0e-06 |", text)
        self.assertRegex(text, r"- close, 2 ranks: each prediction within 25% .*data 0\.800 against 1\.00 \(1\.25×\); "
                               r"tensor 1\.25 against 1\.00 \(0\.80×\); auto 0\.800 against 1\.00 \(1\.25×\) — \*\*MET\*\*")
        self.assertRegex(text, r"- far, 2 ranks: each prediction within 25% .*tensor 1\.26 against 1\.00 \(0\.79×\).* "
                               r"— \*\*NOT MET\*\*")

    def test_auto_not_predicted_slower(self):
        text = render([model("fine", 2.0, 1.1, {2: (1.0, 1.2, 1.0)}, {2: (1.0, 1.2, 1.0)}),
                       model("worse", 2.0, 1.1, {2: (1.0, 1.2, 1.0)}, {2: (1.0, 1.2, 1.0)}, auto_pred={2: 1.05})])
        self.assertRegex(text, r"- fine, 2 ranks: auto predicted no slower than data and tensor: auto 1\.00 ms, the "
                               r"search's plan, data 1\.00, tensor 1\.20 — \*\*MET\*\*")
        self.assertRegex(text, r"- worse, 2 ranks: auto predicted no slower .*: auto 1\.05 ms.* — \*\*NOT MET\*\*")

    def test_oversubscribed_ranks(self):
        text = render([model("m", 2.0, 1.1, {2: (1.0, 1.0, 1.0), 4: (3.0, 3.0, 2.0)},
                             {2: (1.0, 1.0, 1.0), 4: (3.0, 3.0, 2.0)})], ranks=(2, 4))
        self.assertIn("4 ranks run **oversubscribed** on this 2-core machine", text)
        self.assertIn("| m | 4 ranks auto | 1 | 2.00 | 1.00 / 0.55 | 2.00 (1.900 + 0.100) | 1.00 | 0.200 | 3.0e-06 |", text)
        self.assertRegex(text, r"- m, 4 ranks: each prediction within 25% .* — \*\*MET\*\*")
        self.assertRegex(text, r"- m, 4 ranks: auto predicted no slower .* — \*\*MET\*\*")
        self.assertNotIn("on 4 ranks ≥", text)  # the speed target is for ranks on cores of their own
        self.assertIn("`--sbp tensor` on 2 ranks ≥ 1.6×", text)

    def test_file_from_before_predictions(self):
        old = model("old", 2.0, 1.1, {2: (1.0, 1.0, 1.0)})
        for p in old["programs"]:
            del p["ranks"], p["sbp"], p["rounds_ms"]
        old["programs"] = [p for p in old["programs"] if not p["label"].endswith("auto")]
        d = {"argv": "", "date": "2026-12-02 10:00 UTC", "seconds": 30.0, "git": "abc", "mpirun": "Open MPI 4.1.4",
             "load_start": 0.5, "load_end": 0.6, "ranks": 2, "machine": {"cpus": "2"}, "cfg": {"rounds": 9, "seconds": 0.4},
             "models": [old]}
        lines = []
        report_sbp.section_sbp(lines.append, d)
        text = "\n".join(lines)
        self.assertIn("| old | 2 ranks data | 9 | 1.00 | 2.00 / 1.10 | — | — | 0.200 | 3.0e-06 |", text)
        self.assertRegex(text, r"- old: `--sbp tensor` on 2 ranks .* — \*\*MET\*\*")
        self.assertNotIn("oversubscribed", text)
        self.assertIn("This run recorded no predictions", text)
        self.assertNotIn("recorded no predictions", render([model("m", 2.0, 1.1, {2: (1.0, 1.0, 1.0)}, {2: (1.0, 1.0, 1.0)})]))


if __name__ == "__main__":
    unittest.main()
