"""bench/report_sbp.py — the "Distribution (issue 15)" section of bench/RESULTS.md, from SBP.json.

bench/sbp.py measures and writes SBP.json beside the report; bench/report.py calls section_sbp() when the file
is there. Nothing here is measured or typed in: it divides the measured medians, puts the cost model's
predictions (from `flowc info --ranks N --sbp X`, recorded by sbp.py) beside them, and compares both with issue
15's targets:
  - `tensor` on 2 ranks at least 1.6× faster than 1 thread and no slower than 2 threads (the speed target is
    for ranks on cores of their own, so it is judged where the ranks do not outnumber the cores),
  - each prediction (data, tensor, auto) within 25% of the measured median, per model and number of ranks,
  - auto's prediction no more than the smaller of data's and tensor's.
An SBP.json from before predictions were recorded (one "ranks" number, no "predicted") still renders, with "—"
for what it lacks.
"""
import report as rp

TENSOR_SPEEDUP = 1.6
PREDICTION_TOLERANCE = 0.25  # |predicted - measured| ≤ 25% of measured
STRATEGIES = ["data", "tensor", "auto"]


def ranks_of(d):
    return d["ranks"] if isinstance(d["ranks"], list) else [d["ranks"]]


def program_key(p):
    """(ranks, strategy) of a program; (None, None) for the one-process ones (older files name them by label)."""
    if "ranks" in p:
        return p["ranks"], p.get("sbp")
    words = p["label"].split()
    return (int(words[0]), words[2]) if len(words) == 3 and words[1] == "ranks" else (None, None)


def within(predicted, measured):
    return abs(predicted - measured) <= PREDICTION_TOLERANCE * measured


def fmt_pred(pred):
    if not pred:
        return "—"
    if "compute_ms" not in pred:  # a pipeline: its replayed schedule
        return f"{rp.fmt_ms(pred['ms'])} (schedule of {pred.get('stages', '?')} stages)"
    return f"{rp.fmt_ms(pred['ms'])} ({pred['compute_ms']:.3f} + {pred['comm_ms']:.3f})"


def prediction_verdicts(m, n, progs):
    """The two cost-model verdict lines of model m at n ranks (progs: strategy → program), or none when the
    run recorded no predictions."""
    if not all(s in progs and progs[s].get("predicted") for s in STRATEGIES):
        return []
    parts, ok = [], True
    for s in STRATEGIES:
        p = progs[s]
        good = within(p["predicted"]["ms"], p["median_ms"])
        ok &= good
        parts.append(f"{s} {rp.fmt_ms(p['predicted']['ms'])} against {rp.fmt_ms(p['median_ms'])} "
                     f"({p['median_ms'] / p['predicted']['ms']:.2f}×)")
    out = [f"- {m['name']}, {n} ranks: each prediction within {PREDICTION_TOLERANCE:.0%} of the measured time "
           f"(predicted against measured ms, measured/predicted): {'; '.join(parts)} — {rp.verdict(ok)}"]
    pred = m.get("predictions", {}).get(str(n)) or {s: progs[s]["predicted"] for s in STRATEGIES}
    best = min(pred["data"]["ms"], pred["tensor"]["ms"])
    taken = f", {pred['auto']['taken']}" if pred["auto"].get("taken") else ""
    out.append(f"- {m['name']}, {n} ranks: auto predicted no slower than data and tensor: auto "
               f"{rp.fmt_ms(pred['auto']['ms'])} ms{taken}, data {rp.fmt_ms(pred['data']['ms'])}, tensor "
               f"{rp.fmt_ms(pred['tensor']['ms'])} — {rp.verdict(pred['auto']['ms'] <= best)}")
    return out


def section_sbp(add, d):
    ranks = ranks_of(d)
    cpus = str(d.get("machine", {}).get("cpus", ""))
    cores = d.get("cores") or (int(cpus) if cpus.isdigit() else None)
    over = [n for n in ranks if cores and n > cores]
    rounds = d["cfg"]["rounds"]
    add("## Distribution (issue 15)")
    add("")
    add(f"Produced by `python3 bench/run.py --sbp{d['argv']}` on {d['date']} in {d['seconds'] / 60:.1f} min (git "
        f"{d['git']}, {d['mpirun']}; load average {d['load_start']:.2f} at start, {d['load_end']:.2f} at end); "
        f"raw data in SBP.json. Each model as one process at 1 and 2 threads and as `--ranks N` programs "
        f"(N = {', '.join(map(str, ranks))}) under `mpirun -np N` (one thread per rank), {rounds} interleaved "
        "rounds of `--bench` batches of about 0.4 s; the median over rounds of the batch medians.")
    if over:
        add("")
        add(f"{' and '.join(map(str, over))} ranks run **oversubscribed** on this {cores}-core machine "
            "(`mpirun --oversubscribe`: the ranks take turns on the cores), in fewer rounds (see the rounds "
            "column); their times show what the cost model predicts for crowded ranks, not a speed-up.")
    add("")
    add("Predicted: the cost model's time per rank and run from `flowc info model.onnx --ranks N --sbp X` "
        "(compute + communication). Communication: rank 0's measured `--profile` time in collectives per run. "
        "Max |Δ|: the distributed output against the one-process one." +
        ("" if any(p.get("predicted") for m in d["models"] for p in m["programs"]) else
         " This run recorded no predictions (bench/sbp.py before they were added): run it again for them."))
    add("")
    add("| model | program | rounds | median ms | speed-up over 1 thread / 2 threads | predicted ms (compute + comm.) | "
        "measured / predicted | communication ms | max abs diff |")
    add("|---|---|---|---|---|---|---|---|---|")
    verdicts = []
    for m in d["models"]:
        base = m["programs"][0]["median_ms"]
        two = m["programs"][1]["median_ms"]
        by_ranks = {}
        for p in m["programs"]:
            n, s = program_key(p)
            if n:
                by_ranks.setdefault(n, {})[s] = p
            comm, diff, pred = p.get("comm_ms"), p.get("max_abs_diff"), p.get("predicted")
            n_rounds = len(p["rounds_ms"]) if "rounds_ms" in p else rounds
            ratio = "—" if not pred else f"{p['median_ms'] / pred['ms']:.2f}"
            add(f"| {m['name']} | {p['label']} | {n_rounds} | {rp.fmt_ms(p['median_ms'])} | "
                f"{base / p['median_ms']:.2f} / {two / p['median_ms']:.2f} | "
                f"{fmt_pred(pred)} | {ratio} | {'—' if comm is None else f'{comm:.3f}'} | "
                f"{'—' if diff is None else f'{diff:.1e}'} |")
        for n in sorted(by_ranks):
            t = by_ranks[n].get("tensor")
            if t and not (cores and n > cores):
                speed = base / t["median_ms"]
                ok = speed >= TENSOR_SPEEDUP and t["median_ms"] <= two
                verdicts.append(f"- {m['name']}: `--sbp tensor` on {n} ranks ≥ {TENSOR_SPEEDUP}× faster than 1 thread "
                                f"and no slower than 2 threads: {speed:.2f}×, {t['median_ms'] / two:.2f}× the 2-thread "
                                f"time — {rp.verdict(ok)}")
            verdicts += prediction_verdicts(m, n, by_ranks[n])
            pp = by_ranks[n].get("pipeline")
            if pp and pp.get("predicted"):
                good = within(pp["predicted"]["ms"], pp["median_ms"])
                verdicts.append(f"- {m['name']}, {n} ranks: the pipeline's prediction (not one of issue 15's targets) "
                                f"{rp.fmt_ms(pp['predicted']['ms'])} against {rp.fmt_ms(pp['median_ms'])} ms measured "
                                f"({pp['median_ms'] / pp['predicted']['ms']:.2f}×): "
                                f"{'within' if good else 'not within'} {PREDICTION_TOLERANCE:.0%}")
    add("")
    add("### Distribution targets")
    add("")
    for v in verdicts:
        add(v)
    add("")
