#!/usr/bin/env bash
# fuzz.sh: builds the libFuzzer targets of fuzz/ with clang (ASan+UBSan,
# build-fuzz/) and runs each for a bounded time, then prints one line per
# target: executions, seconds, coverage, corpus size.
#
#   ./scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   default 60 s, every target
#
# New inputs go to build-fuzz/corpus/<target>/ (the seeds in fuzz/corpus/ are
# read, never written); a crash is saved as build-fuzz/crash/<target>-* and
# fails the script. FUZZ_JOBS=N runs N targets at once (default 1);
# FUZZ_ARGS adds libFuzzer flags (e.g. FUZZ_ARGS=-runs=10000000 with a long
# time: that many executions).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
source "$root/scripts/deps.sh"
source "$root/scripts/modes.sh"
HIXL_DEBS+=(clang libclang-rt-14-dev)
hixl_install_deps

build="$root/build-fuzz"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHIXL_SANITIZE=address,undefined -DHIXL_BUILD_FUZZERS=ON -DHIXL_BUILD_TESTS=OFF \
  -DHIXL_BUILD_TOOLS=OFF -DHIXL_BUILD_EXAMPLES=OFF -DHIXL_BUILD_PYTHON=OFF >/dev/null
cmake --build "$build" -j "$(nproc)"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  # A target is fuzz/<name>_fuzzer.cc; other programs there (hixl_fuzz_seeds,
  # which writes the seed corpora) are not fuzzed.
  for bin in "$build"/fuzz/hixl_fuzz_*; do
    name=${bin##*/hixl_fuzz_}
    [ -f "$root/fuzz/${name}_fuzzer.cc" ] && targets+=("$name")
  done
fi

mkdir -p "$build/crash" "$build/log"

run_one() {
  local t=$1 corpus="$build/corpus/$1" dict=()
  mkdir -p "$corpus"
  [ -f "$root/fuzz/$t.dict" ] && dict=(-dict="$root/fuzz/$t.dict")
  "$build/fuzz/hixl_fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 -max_len=8192 \
    -artifact_prefix="$build/crash/$t-" "${dict[@]}" ${FUZZ_ARGS:-} "$corpus" "$root/fuzz/corpus/$t" \
    >"$build/log/$t.log" 2>&1
}

status=0
jobs=${FUZZ_JOBS:-1}
pids=()
for t in "${targets[@]}"; do
  echo "== fuzzing $t for ${seconds}s =="
  run_one "$t" &
  pids+=("$!:$t")
  if [ ${#pids[@]} -ge "$jobs" ]; then
    for p in "${pids[@]}"; do wait "${p%%:*}" || { echo "FAILED: ${p#*:} (build-fuzz/log/${p#*:}.log)"; status=1; }; done
    pids=()
  fi
done
for p in "${pids[@]}"; do wait "${p%%:*}" || { echo "FAILED: ${p#*:} (build-fuzz/log/${p#*:}.log)"; status=1; }; done

printf '%-16s %12s %8s %8s %8s %8s\n' target execs seconds exec/s cov corpus
for t in "${targets[@]}"; do
  log="$build/log/$t.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  printf '%-16s %12s %8s %8s %8s %8s\n' "$t" "${execs:-?}" "${secs:-?}" "${rate:-?}" "${cov:-?}" "${corp:-?}"
done
if [ $status -ne 0 ]; then
  echo "crashes (inputs in build-fuzz/crash/):"
  ls "$build/crash"
  for t in "${targets[@]}"; do grep -B2 -A30 'ERROR\|invariant broken\|deadly signal' "$build/log/$t.log" | head -60 || true; done
fi
exit $status
