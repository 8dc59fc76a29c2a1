#!/usr/bin/env bash
# test.sh: builds hixl and runs every test suite (C++ unit and multi-process
# integration tests with ctest, Python tests with pytest).
#
#   ./scripts/test.sh           normal build (build-test/)
#   ./scripts/test.sh --asan    the same suites under ASan+UBSan (build-asan/)
#   ./scripts/test.sh --tsan    the same suites under TSan (build-tsan/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/deps.sh"
hixl_install_deps

mode=${1:-}
case "$mode" in
  "") build="$root/build-test"; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  --asan) build="$root/build-asan"; flags=(-DCMAKE_BUILD_TYPE=Debug -DHIXL_SANITIZE=address,undefined) ;;
  --tsan) build="$root/build-tsan"; flags=(-DCMAKE_BUILD_TYPE=Debug -DHIXL_SANITIZE=thread) ;;
  *) echo "usage: $0 [--asan|--tsan]" >&2; exit 2 ;;
esac

cmake -S "$root" -B "$build" "${flags[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
export HIXL_LOG_LEVEL=${HIXL_LOG_LEVEL:-error}

echo "== C++ suites (ctest) =="
ctest --test-dir "$build" --output-on-failure -j 2

if [ -d "$build/python/hixl" ] && [ -z "$mode" ]; then
  echo "== Python suites (pytest) =="
  PYTHONPATH="$build/python" /usr/bin/python3 -m pytest -q "$root/tests/python"
fi
echo "all tests passed ($([ -z "$mode" ] && echo normal || echo "${mode#--}") build)"
