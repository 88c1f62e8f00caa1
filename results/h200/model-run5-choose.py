"""Pick the row kernel per operation from the large-size efficiency scan (docs/MODEL.md, attempt 5).

For layer norm and softmax separately: the variant whose worse precision (min over fp32, fp16 of
achieved / pattern ceiling in `kernels_large`) is highest; ties go to the earlier file. Prints
shell assignments MEMSCOPE_ROWS_LAYERNORM=... MEMSCOPE_ROWS_SOFTMAX=... and the table to stderr.
Usage: python3 model-run5-choose.py eff-v1.json eff-v3.json ...
"""
import json
import sys

best = {}
for path in sys.argv[1:]:
    try:
        run = json.load(open(path))["model"]
    except Exception as e:  # a failed variant is skipped, never chosen
        print(f"{path}: unreadable ({e})", file=sys.stderr)
        continue
    variant = path.rsplit("eff-", 1)[-1].split(".")[0]
    for kind in ("layernorm", "softmax"):
        fr = {k["dtype"]: k["fraction"] for k in run["kernels_large"] if k["kernel"] == kind}
        score = min(fr.values())
        print(f"{variant} {kind}: " + ", ".join(f"{d} {100 * f:.1f}%" for d, f in sorted(fr.items())), file=sys.stderr)
        if kind not in best or score > best[kind][0]:
            best[kind] = (score, variant)
print(f"MEMSCOPE_ROWS_LAYERNORM={best['layernorm'][1]} MEMSCOPE_ROWS_SOFTMAX={best['softmax'][1]}")
