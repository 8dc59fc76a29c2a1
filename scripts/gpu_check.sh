#!/usr/bin/env bash
# gpu_check.sh: hixl's device memory on a host with an NVIDIA GPU, in one
# go (under 8 minutes on one GPU): builds the tests, runs the device tests
# (the fake-driver ones and those on the real GPU: two processes on one GPU,
# cuda_ipc, tcp staging, deregistration, a peer killed mid-copy), a short
# device benchmark, and prints a summary. docs/device.md says what each
# checks. Needs cmake, a C++ compiler, GoogleTest and nlohmann-json (what
# scripts/deps.sh installs); CUDA headers are optional (with them the build
# also checks hixl's driver API declarations against cuda.h).
#
#   ./scripts/gpu_check.sh [build-dir]     (default: build-gpu/; BUILD_TYPE=Release)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
log=$build/gpu_check.log
start=$(date +%s)
mkdir -p "$build"
: > "$log"
say() { echo "$*" | tee -a "$log"; }

say "== host =="
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$log" ||
  say "nvidia-smi: not found (the tests say whether libcuda.so.1 loads)"

say "== build ($build) =="
if ! cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
    >>"$log" 2>&1 ||
   ! cmake --build "$build" -j "$(nproc)" --target hixl_unit_tests hixl_integration_tests hixl_test_peer \
    >>"$log" 2>&1; then
  say "BUILD FAILED (see $log)"
  exit 1
fi
grep -E "cuda.h (found|not found)" "$log" | head -1

declare -A result
run() {  # name, then the command
  local name=$1
  shift
  say "== $name =="
  if timeout 300 "$@" >"$build/$name.log" 2>&1; then result[$name]=pass; else result[$name]="FAIL (rc $?)"; fi
  cat "$build/$name.log" >>"$log"
  grep -E "^\[ +(PASSED|FAILED|SKIPPED) +\] [0-9]+ test" "$build/$name.log" | sed 's/^/  /' | tee -a "$log"
}
run fake_driver_unit "$build/tests/hixl_unit_tests" --gtest_filter='DeviceMemory.*:IpcHandleCache.*:CudaIpcChannel.*'
run fake_driver_engines "$build/tests/hixl_integration_tests" --gtest_filter='DeviceStaging*:CudaIpc.*'
run real_gpu "$build/tests/hixl_integration_tests" --gtest_filter='Gpu.*:*GpuTwoProcess*'
skipped=$(grep -c "no GPU here" "$log" || true)
say "== device benchmark (1 MiB blocks, 256 MiB, median of 5) =="
timeout 240 "$build/tests/hixl_integration_tests" --gtest_also_run_disabled_tests --gtest_filter='Gpu.DISABLED_Bench' \
  >>"$log" 2>&1 || result[bench]="FAIL"
grep "^GPU_BENCH" "$log" | sed 's/^GPU_BENCH /  /' 

say "== summary ($(( $(date +%s) - start )) s) =="
status=0
for k in fake_driver_unit fake_driver_engines real_gpu bench; do
  v=${result[$k]:-pass}
  say "  $k: $v"
  [ "$v" = pass ] || status=1
done
if [ "$skipped" -gt 0 ]; then
  say "  the real-GPU tests were SKIPPED: no usable GPU here (see $log)"
  status=1
fi
grep "^GPU_BENCH" "$log" | sed 's/^GPU_BENCH /  bench: /'
exit $status
