#!/usr/bin/env python3
"""Side by side: `memscope model` results of the old path (`memscope/bottleneck-model/1`: ceilings
measured by the model itself, under "ceilings"; the 58 points under "model") and the new one
(`memscope/1`: the ceilings taken from the probes' findings of the same session, under
"model.ceilings"; the 58 points under "model.parts.evaluation"), issue 24.

usage: compare_model_runs.py [--markdown] FILE... (e.g. old-model-1.json old-model-2.json
new-model-1.json new-model-2.json). Files are grouped by path (old / new, from their schema);
for each group with two or more files the spread is max - min over the group, in percent of
its mean; `new-old` is the difference of the group means in percent of the old mean.
Prints one table: the ceilings (bandwidth copy/read/write, peaks, per-class launch floors), the
model summary over the 58 points (median measured/predicted, within 25 %, within 2x, overall and
by regime), the fusion ratio (two kernels / fused, measured) when present, and per operation the
median over the 58 points of new/old measured and predicted times.
"""
import json
import statistics
import sys

OLD, NEW = "memscope/bottleneck-model/1", "memscope/1"


def load(path):
    with open(path) as f:
        d = json.load(f)
    schema = d.get("schema")
    if schema == NEW:
        m = d.get("model") or {}
        parts = m.get("parts") or {}
        return {"path": "new", "ceilings": m.get("ceilings") or {}, "evaluation": parts.get("evaluation"),
                "fusion": parts.get("fusion"), "batch": parts.get("batch"), "doc": d}
    if schema == OLD or schema is None:
        return {"path": "old", "ceilings": d.get("ceilings") or {}, "evaluation": d.get("model"),
                "fusion": d.get("fusion"), "batch": d.get("batch"), "doc": d}
    raise SystemExit(f"{path}: schema {schema!r} is neither {OLD!r} nor {NEW!r}")


def metrics(r):
    """Ordered (name, value, unit) rows of one file; value None when absent."""
    out = []
    c = r["ceilings"]
    for p in ["copy", "read", "write"]:
        out.append((f"bw {p} (GB/s)", (c.get("bandwidth_bytes_per_s") or {}).get(p), 1e-9))
    for p in ["fp32", "fp16", "bf16"]:
        out.append((f"peak {p} (TFLOP/s)", (c.get("peak_flops_per_s") or {}).get(p), 1e-12))
    floors = c.get("launch_floor_s") or {}
    for k in ["matmul.fp32", "matmul.fp16", "add", "mul", "fma", "gelu", "layernorm", "softmax", "attention"]:
        out.append((f"launch floor {k} (us)", floors.get(k), 1e6))
    ev = r["evaluation"] or {}
    s = ev.get("summary") or {}
    groups = [("all", s.get("all"))] + sorted((s.get("by_regime") or {}).items())
    for name, st in groups:
        st = st or {}
        n = st.get("count")
        out.append((f"58 points {name}: count", n, 1))
        out.append((f"58 points {name}: median measured/predicted", st.get("median_ratio"), 1))
        out.append((f"58 points {name}: within 25 % (%)", st.get("within_25pct"), 100))
        out.append((f"58 points {name}: within 2x (%)", st.get("within_2x"), 100))
    f = r["fusion"] or {}
    for row in f.get("rows") or []:
        out.append((f"fusion {row.get('dtype')}: measured ratio two/fused", row.get("measured_ratio"), 1))
        out.append((f"fusion {row.get('dtype')}: measured / predicted ratio", row.get("ratio_vs_prediction"), 1))
    return out


def points(r):
    ev = r["evaluation"] or {}
    return {p["operation"]: p for p in ev.get("points") or []}


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3f}"


def spread(vals):
    vals = [v for v in vals if v is not None]
    if len(vals) < 2:
        return None
    m = statistics.mean(vals)
    return 100.0 * (max(vals) - min(vals)) / m if m else None


def main(argv):
    md = "--markdown" in argv
    files = [a for a in argv if a != "--markdown"]
    if not files:
        raise SystemExit(__doc__)
    runs = []
    for p in files:
        try:
            runs.append((p, load(p)))
        except (OSError, ValueError) as e:
            print(f"skipped {p}: {e}", file=sys.stderr)
    if not runs:
        raise SystemExit("no readable file")
    names = [p.rsplit("/", 1)[-1].removesuffix(".json") for p, _ in runs]
    header = ["metric"] + names + ["old spread %", "new spread %", "new-old %"]
    rows = []
    table = [metrics(r) for _, r in runs]
    for i, (name, _, scale) in enumerate(table[0]):
        vals = [t[i][1] * scale if t[i][1] is not None else None for t in table]
        if all(v is None for v in vals):
            continue
        old = [v for v, (_, r) in zip(vals, runs) if r["path"] == "old"]
        new = [v for v, (_, r) in zip(vals, runs) if r["path"] == "new"]
        so, sn = spread(old), spread(new)
        oo, nn = [v for v in old if v is not None], [v for v in new if v is not None]
        diff = None
        if oo and nn and statistics.mean(oo):
            diff = 100.0 * (statistics.mean(nn) - statistics.mean(oo)) / statistics.mean(oo)
        rows.append([name] + [fmt(v) for v in vals] + [fmt(so), fmt(sn), fmt(diff)])
    # Per operation: new/old over the operations both paths measured.
    olds = [points(r) for _, r in runs if r["path"] == "old"]
    news = [points(r) for _, r in runs if r["path"] == "new"]
    if olds and news:
        for what, get in [("measured", lambda p: p["measured"]["per_call_s"]), ("predicted", lambda p: p["prediction"]["time_s"])]:
            ratios = []
            for op in olds[0]:
                o = [get(x[op]) for x in olds if op in x]
                n = [get(x[op]) for x in news if op in x]
                if o and n:
                    ratios.append(statistics.mean(n) / statistics.mean(o))
            if ratios:
                rows.append([f"per operation: median new/old {what} time - 1, % ({len(ratios)} ops)"] + ["" for _ in runs]
                            + ["", "", fmt(100.0 * (statistics.median(ratios) - 1.0))])
    if md:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(str(x[i])) for x in [header] + rows) for i in range(len(header))]
        for r in [header] + rows:
            print("  ".join(str(c).ljust(w) if j == 0 else str(c).rjust(w) for j, (c, w) in enumerate(zip(r, widths))))
    for p, r in runs:
        d = r["doc"]
        if r["path"] == "new":
            inputs = (d.get("model") or {}).get("inputs") or []
            stand = [i["ceiling"] for i in inputs if i.get("stands_in_for")]
            print(f"{p}: {len(inputs)} ceiling inputs from findings, stand-ins: {stand or 'none'}; "
                  f"parts: {sorted(((d.get('model') or {}).get('parts') or {}).keys())}; run state: {(d.get('run') or {}).get('state')}")
        else:
            print(f"{p}: old layout, command {d.get('command')!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
