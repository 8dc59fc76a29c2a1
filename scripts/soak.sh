#!/usr/bin/env bash
# soak.sh: builds hixl_soak (build-test/) and runs it: 3 targets and 3
# initiator processes moving and checking bytes for SECONDS (default 60)
# while processes are killed, frozen and restarted, regions deregistered and
# registered, links dropped. Fails on any broken invariant (docs/testing.md).
#
#   ./scripts/soak.sh [SECONDS] [hixl_soak options, e.g. --initiators 4 --seed 7]
#
# The children's logs (HIXL_LOG_LEVEL, default error) and the report
# (report.txt) go to build-test/soak/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
source "$root/scripts/deps.sh"
hixl_install_deps

build="$root/build-test"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target hixl_soak
out="$build/soak"
rm -rf "$out"
mkdir -p "$out"
export HIXL_LOG_LEVEL=${HIXL_LOG_LEVEL:-error}
echo "== soak: ${seconds}s (logs in $out) =="
"$build/tests/hixl_soak" --seconds "$seconds" --dir "$out" "$@" | tee "$out/report.txt"
