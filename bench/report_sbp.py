"""bench/report_sbp.py — the "Distribution (issue 15)" section of bench/RESULTS.md, from SBP.json.

bench/sbp.py measures and writes SBP.json beside the report; bench/report.py calls section_sbp() when the file
is there. Nothing here is measured or typed in: it divides the measured medians and compares them with issue
15's speed target (`tensor` on N ranks at least 1.6× faster than 1 thread and no slower than 2 threads).
"""
import report as rp

TENSOR_SPEEDUP = 1.6


def section_sbp(add, d):
    n = d["ranks"]
    add("## Distribution (issue 15)")
    add("")
    add(f"Produced by `python3 bench/run.py --sbp{d['argv']}` on {d['date']} in {d['seconds'] / 60:.1f} min (git "
        f"{d['git']}, {d['mpirun']}; load average {d['load_start']:.2f} at start, {d['load_end']:.2f} at end); "
        f"raw data in SBP.json. Each model as one process at 1 and 2 threads and as `--ranks {n}` programs under "
        f"`mpirun -np {n}` (one thread per rank), {d['cfg']['rounds']} interleaved rounds of `--bench` batches of "
        "about 0.4 s; the median over rounds of the batch medians. Communication: rank 0's `--profile` time in "
        "collectives per run. Max |Δ|: the distributed output against the one-process one.")
    add("")
    add("| model | program | median ms | speed-up over 1 thread | communication ms | max abs diff |")
    add("|---|---|---|---|---|---|")
    verdicts = []
    for m in d["models"]:
        base = m["programs"][0]["median_ms"]
        two = m["programs"][1]["median_ms"]
        for p in m["programs"]:
            comm = p.get("comm_ms")
            diff = p.get("max_abs_diff")
            add(f"| {m['name']} | {p['label']} | {rp.fmt_ms(p['median_ms'])} | {base / p['median_ms']:.2f} | "
                f"{'—' if comm is None else f'{comm:.3f}'} | {'—' if diff is None else f'{diff:.1e}'} |")
            if p["label"].endswith("tensor"):
                speed = base / p["median_ms"]
                ok = speed >= TENSOR_SPEEDUP and p["median_ms"] <= two
                verdicts.append(f"- {m['name']}: `--sbp tensor` on {n} ranks ≥ {TENSOR_SPEEDUP}× faster than 1 thread "
                                f"and no slower than 2 threads: {speed:.2f}×, {p['median_ms'] / two:.2f}× the 2-thread "
                                f"time — {rp.verdict(ok)}")
    add("")
    add("### Distribution targets")
    add("")
    for v in verdicts:
        add(v)
    add("")
