#!/usr/bin/python3
"""Checks a hixl_kv_bench report (the fields docs/kv.md names, every row's
bytes checked) and that scripts/plot_kv_bench.py draws it.

    check_kv_bench.py path/to/plot_kv_bench.py report.json out.png
"""
import json
import os
import subprocess
import sys

ROW_FIELDS = {
    "model": str, "layers": int, "block_tokens": int, "prompt_tokens": int, "pattern": str, "mode": str,
    "transport": str, "request_bytes": int, "blocks": int, "descriptors": int, "iters": int, "p50_ms": float,
    "p99_ms": float, "gbps": float, "contiguous_p50_ms": float, "contiguous_gbps": float, "ratio": float,
    "bytes_checked": bool,
}
LAYERWISE_FIELDS = ("compute_us_per_layer", "exposed_p50_ms", "exposed_p99_ms", "one_layer_p50_ms",
                    "exposed_over_layer")


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    script, report, png = argv[1:]
    with open(report) as f:
        doc = json.load(f)
    rows = doc.get("rows", [])
    problems = [] if rows else ["no rows"]
    for i, r in enumerate(rows):
        for name, kind in ROW_FIELDS.items():
            ok = isinstance(r.get(name), (int, float)) if kind is float else isinstance(r.get(name), kind)
            if not ok:
                problems.append(f"row {i}: {name} is {r.get(name)!r}")
        if r.get("mode") == "layerwise":
            problems += [f"row {i}: no {n}" for n in LAYERWISE_FIELDS if n not in r]
        if r.get("bytes_checked") is not True:
            problems.append(f"row {i}: bytes not checked")
    if os.path.exists(png):
        os.remove(png)
    proc = subprocess.run([sys.executable, script, png, report], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 or not os.path.exists(png) or not open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n":
        problems.append(f"plot_kv_bench.py: exit {proc.returncode}: {proc.stdout}{proc.stderr}")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
