#!/usr/bin/python3
"""Runs scripts/plot_bench.py on a hixl_bench report and checks its PNGs.

    check_plot.py path/to/plot_bench.py results.json outdir/

Passes when the script exits 0 and wrote throughput.png and ratio.png (and
every file it printed) as non-empty PNG files under outdir/.
"""
import os
import subprocess
import sys

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
REQUIRED = ("throughput.png", "ratio.png")


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    script, report, outdir = argv[1:]
    for name in REQUIRED:  # stale files from an earlier run must not pass
        path = os.path.join(outdir, name)
        if os.path.exists(path):
            os.remove(path)
    proc = subprocess.run([sys.executable, script, report, outdir], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        print(f"plot_bench.py exited {proc.returncode}:\n{proc.stdout}{proc.stderr}", file=sys.stderr)
        return 1
    printed = [line.strip() for line in proc.stdout.splitlines() if line.strip()]
    wanted = set(printed) | {os.path.join(outdir, n) for n in REQUIRED}
    bad = []
    for path in sorted(wanted):
        try:
            with open(path, "rb") as f:
                head = f.read(len(PNG_MAGIC))
            size = os.path.getsize(path)
        except OSError as e:
            bad.append(f"{path}: {e}")
            continue
        if head != PNG_MAGIC or size < 1000:
            bad.append(f"{path}: not a PNG chart ({size} bytes)")
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    print(f"OK: {len(wanted)} PNG files in {outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
