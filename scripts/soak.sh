#!/usr/bin/env bash
# soak.sh: builds hixl_soak and runs it: 3 targets and 3 initiator processes
# moving and checking bytes for SECONDS (default 60) while processes are
# killed, frozen and restarted, regions deregistered and registered, links
# dropped. Fails on any broken invariant (docs/testing.md).
#
#   ./scripts/soak.sh [SECONDS] [--asan|--tsan] [hixl_soak options, e.g. --initiators 4 --seed 7]
#
# Builds in build-test/ (or build-asan/, build-tsan/, as test.sh does); the
# children's logs (HIXL_LOG_LEVEL, default error) and the report go to
# <build>/soak/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
mode=""
case "${1:-}" in --asan|--tsan) mode=$1; shift ;; esac
source "$root/scripts/deps.sh"
source "$root/scripts/modes.sh"
hixl_install_deps

hixl_mode "$mode"
cmake -S "$root" -B "$build" "${flags[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)" --target hixl_soak
out="$build/soak"
rm -rf "$out"
mkdir -p "$out"
echo "== soak: ${seconds}s ${mode:+(${mode#--}) }(logs in $out) =="
"$build/tests/hixl_soak" --seconds "$seconds" --dir "$out" "$@" | tee "$out/report.txt"
