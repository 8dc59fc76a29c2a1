#!/usr/bin/python3
"""Turns a hixl_bench JSON report into PNG charts.

    /usr/bin/python3 scripts/plot_bench.py results.json outdir/

Writes into outdir/ (created if needed):
  throughput.png  GB/s against block size (log2 axis), one panel per
                  transport: a solid line per op, a dashed line for its
                  baseline measured in the same run
  ratio.png       hixl / baseline against block size, a line per
                  (transport, op)
  async.png       async GB/s against depth (64K blocks), with sync lines
                  for reference, when the report has async results
  latency.png     small-transfer p50/p99 next to the TCP ping-pong, when
                  the report has latency results
Prints the files written. Needs only Debian's python3-matplotlib.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display: render to files only
import matplotlib.pyplot as plt  # noqa: E402  (after use())
from matplotlib.ticker import FuncFormatter  # noqa: E402

COLORS = {"write": "tab:blue", "read": "tab:orange"}
DPI = 80  # small, commit-friendly PNGs


def size_label(n, _pos=None):
    if n != int(n):  # tick positions arrive as floats
        return f"{n:g}"
    n = int(n)
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= (1 << shift) and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{int(n)}"


def is_sweep(r):
    """The block sweep: sync, one thread, scattered, one call per iteration."""
    return (r["mode"] == "sync" and r["threads"] == 1 and r.get("layout", "scattered") == "scattered"
            and r["batch"] * r["block"] == r["bytes"])


def series(results, transport, op):
    pts = sorted((r["block"], r) for r in results if r["transport"] == transport and r["op"] == op)
    return [b for b, _ in pts], [r for _, r in pts]


def transports_of(results):
    """tcp first, then the rest by name."""
    return sorted({r["transport"] for r in results}, key=lambda t: (t != "tcp", t))


def log2_axis(ax, blocks):
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(blocks))  # the measured sizes, not every other power of 2
    ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    ax.grid(True, which="major", alpha=0.3)


def title_suffix(doc):
    host = doc.get("host", {})
    cfg = doc.get("config", {})
    total = size_label(cfg.get("total_size", 0))
    return f"{host.get('cpus', '?')} CPUs, {total} per iteration, median of {cfg.get('iters', '?')}"


def ops_of(results, transport):
    return [op for op in ("write", "read") if any(r["transport"] == transport and r["op"] == op for r in results)]


def plot_throughput(doc, outdir):
    results = [r for r in doc["results"] if is_sweep(r)]
    transports = transports_of(results)
    if not transports:
        return None
    fig, axes = plt.subplots(1, len(transports), figsize=(5.5 * len(transports), 4), squeeze=False)
    for ax, t in zip(axes[0], transports):
        for op in ops_of(results, t):
            xs, rs = series(results, t, op)
            ax.plot(xs, [r["gbps"] for r in rs], "o-", color=COLORS[op], label=f"hixl {t} {op}")
            with_base = [(x, r) for x, r in zip(xs, rs) if r["baseline"] != "none"]
            if with_base:
                name = with_base[0][1]["baseline"]
                ax.plot([x for x, _ in with_base], [r["baseline_gbps"] for _, r in with_base], "s--",
                        color=COLORS[op], alpha=0.6, label=f"{'plain TCP' if name == 'tcp' else name} {op}")
        log2_axis(ax, {r["block"] for r in results if r["transport"] == t})
        ax.set_ylim(bottom=0)
        ax.set_xlabel("block size")
        ax.set_ylabel("GB/s")
        ax.set_title(f"{t}: hixl vs its baseline")
        ax.legend(fontsize=8)
    fig.suptitle(f"Throughput ({title_suffix(doc)})", fontsize=10)
    fig.tight_layout()
    return save(fig, outdir, "throughput.png")


def plot_ratio(doc, outdir):
    results = [r for r in doc["results"] if is_sweep(r) and r["baseline"] != "none"]
    if not results:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4))
    styles = {}
    for t in transports_of(results):
        styles[t] = "o-" if not styles else "^-."
        for op in ops_of(results, t):
            xs, rs = series(results, t, op)
            base = rs[0]["baseline"]
            ax.plot(xs, [r["ratio"] for r in rs], styles[t], color=COLORS[op], label=f"{t} {op} / {base}")
    ax.axhline(1.0, color="gray", linewidth=1)
    log2_axis(ax, {r["block"] for r in results})
    ax.set_ylim(bottom=0)
    ax.set_xlabel("block size")
    ax.set_ylabel("hixl / baseline (same run)")
    ax.set_title(f"Ratio to baseline ({title_suffix(doc)})", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save(fig, outdir, "ratio.png")


def plot_async(doc, outdir):
    results = doc["results"]
    asyncs = [r for r in results if r["mode"] == "async" and r["threads"] == 1 and r["batch"] == 1]
    transports = transports_of(asyncs)
    if not transports:
        return None
    fig, axes = plt.subplots(1, len(transports), figsize=(5.5 * len(transports), 4), squeeze=False)
    for ax, t in zip(axes[0], transports):
        for op in ops_of(asyncs, t):
            pts = sorted((r["depth"], r) for r in asyncs if r["transport"] == t and r["op"] == op)
            block = size_label(pts[0][1]["block"])
            ax.plot([d for d, _ in pts], [r["gbps"] for _, r in pts], "o-", color=COLORS[op],
                    label=f"{op}, async {block} blocks")
            for r in results:
                if is_sweep(r) and r["transport"] == t and r["op"] == op and r["block"] == 1 << 20:
                    ax.axhline(r["gbps"], color=COLORS[op], linestyle=":", label=f"{op}, one sync call of 1M blocks")
        ax.set_xscale("log", base=2)
        ax.set_xticks([d for d in sorted({r["depth"] for r in asyncs if r["transport"] == t})])
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.set_xlabel("requests in flight (depth)")
        ax.set_ylabel("GB/s")
        ax.set_title(f"{t}: TransferAsync, one block per request")
        ax.legend(fontsize=8)
    fig.suptitle(f"Async ({title_suffix(doc)})", fontsize=10)
    fig.tight_layout()
    return save(fig, outdir, "async.png")


def plot_latency(doc, outdir):
    lat = doc.get("latency", [])
    if not lat:
        return None
    labels = [f"{l['transport']} {l['op']}\n{l['size']} B" for l in lat]
    xs = range(len(lat))
    w = 0.2
    fig, ax = plt.subplots(figsize=(1.6 * len(lat) + 2, 4))
    ax.bar([x - 1.5 * w for x in xs], [l["p50_us"] for l in lat], w, color="tab:blue", label="hixl p50")
    ax.bar([x - 0.5 * w for x in xs], [l["p99_us"] for l in lat], w, color="tab:blue", alpha=0.5, label="hixl p99")
    base = [l for l in lat if l.get("baseline", "none") != "none"]
    if base:
        ax.bar([x + 0.5 * w for x, l in zip(xs, lat) if l in base], [l["baseline_p50_us"] for l in base], w,
               color="tab:gray", label="TCP ping-pong p50")
        ax.bar([x + 1.5 * w for x, l in zip(xs, lat) if l in base], [l["baseline_p99_us"] for l in base], w,
               color="tab:gray", alpha=0.5, label="TCP ping-pong p99")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("microseconds")
    ax.set_title("Small-transfer latency (same run)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return save(fig, outdir, "latency.png")


def save(fig, outdir, name):
    path = os.path.join(outdir, name)
    fig.savefig(path, dpi=DPI, pil_kwargs={"optimize": True})
    plt.close(fig)
    return path


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        doc = json.load(f)
    if doc.get("tool") != "hixl_bench":
        print(f"{argv[1]}: not a hixl_bench report", file=sys.stderr)
        return 1
    os.makedirs(argv[2], exist_ok=True)
    written = [p for p in (plot_throughput(doc, argv[2]), plot_ratio(doc, argv[2]), plot_async(doc, argv[2]),
                           plot_latency(doc, argv[2])) if p]
    if not written:
        print(f"{argv[1]}: no results to plot", file=sys.stderr)
        return 1
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
