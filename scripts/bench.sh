#!/usr/bin/env bash
# bench.sh: builds hixl (Release) and runs the full hixl_bench suite on this
# host, then draws the charts: what docs/performance.md shows, in one
# command.
#
#   ./scripts/bench.sh                 results in build/bench/
#   ./scripts/bench.sh -o DIR          results in DIR/
#   ./scripts/bench.sh -- --iters 3    extra arguments go to hixl_bench
#
# Writes results.txt (the tables), results.json, results.csv and the PNG
# charts. Takes a few minutes; machines shared with other work give noisy
# absolute numbers: compare the ratios, which are measured in the same run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/build/bench"
if [ "${1:-}" = "-o" ]; then
  out=$2
  shift 2
fi
[ "${1:-}" = "--" ] && shift
source "$root/scripts/deps.sh"
hixl_install_deps

build="${HIXL_BENCH_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target hixl_bench >/dev/null

mkdir -p "$out"
echo "== hixl_bench --suite (a few minutes; progress on stderr) =="
"$build/tools/hixl_bench" --demo --suite --iters 11 \
  --json "$out/results.json" --csv "$out/results.csv" "$@" | tee "$out/results.txt"
echo
echo "== charts =="
/usr/bin/python3 "$root/scripts/plot_bench.py" "$out/results.json" "$out"
