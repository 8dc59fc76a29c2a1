#!/usr/bin/python3
"""Turns hixl_kv_bench JSON reports into a PNG chart.

    /usr/bin/python3 scripts/plot_kv_bench.py out.png report.json [report.json ...]

One panel per mode (pull, push, layerwise): for every (model, block tokens,
prompt, transport), a bar per block pattern of the KV call's GB/s beside the
one contiguous hixl transfer of the same bytes measured in the same run
(hatched). Several reports (runs) are summarized by their median. Prints the
file written. Needs only Debian's python3-matplotlib.
"""
import json
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")  # no display: render to files only
import matplotlib.pyplot as plt  # noqa: E402

PATTERNS = ("contiguous", "realistic", "random")
COLORS = {"contiguous": "tab:blue", "realistic": "tab:green", "random": "tab:orange"}


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    out, reports = argv[1], argv[2:]
    kv, base, runs = defaultdict(list), defaultdict(list), defaultdict(set)
    for path in reports:
        with open(path) as f:
            for r in json.load(f)["rows"]:
                config = f"{r['model']} L{r['layers']}\n{r['block_tokens']}-tok {r['prompt_tokens'] // 1024}K {r['transport']}"
                key = (r["mode"], config, r["pattern"])
                kv[key].append(r["gbps"])
                base[key].append(r["contiguous_gbps"])
                runs[r["mode"]].add(path)
    modes = [m for m in ("pull", "push", "layerwise") if any(k[0] == m for k in kv)]
    if not modes:
        print("no rows in the reports", file=sys.stderr)
        return 1
    fig, axes = plt.subplots(len(modes), 1, figsize=(10, 3.2 * len(modes)), squeeze=False)
    for ax, mode in zip(axes[:, 0], modes):
        configs = sorted({k[1] for k in kv if k[0] == mode})
        width = 0.8 / (2 * len(PATTERNS))
        for i, pattern in enumerate(PATTERNS):
            xs, ys, bs = [], [], []
            for c, config in enumerate(configs):
                key = (mode, config, pattern)
                if key in kv:
                    xs.append(c + (2 * i - len(PATTERNS)) * width + width / 2)
                    ys.append(statistics.median(kv[key]))
                    bs.append(statistics.median(base[key]))
            if not xs:
                continue
            ax.bar(xs, ys, width, color=COLORS[pattern], label=f"{pattern}")
            ax.bar([x + width for x in xs], bs, width, color=COLORS[pattern], alpha=0.35, hatch="//",
                   label=f"{pattern}: one contiguous transfer")
        ax.set_xticks(range(len(configs)))
        ax.set_xticklabels(configs, fontsize=7)
        ax.set_ylabel("GB/s")
        ax.set_title(f"{mode} (median of {len(runs[mode])} run(s))", fontsize=9)
        ax.legend(fontsize=6, ncol=3)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
