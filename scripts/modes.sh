#!/usr/bin/env bash
# modes.sh: the build of each test mode (directory, CMake flags) and the
# sanitizer options tests run with. Sourced by test.sh and soak.sh.

# hixl_mode ""|--asan|--tsan: sets build (under $root) and flags; fails on
# anything else.
hixl_mode() {
  case "$1" in
    "") build="$root/build-test"; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
    --asan) build="$root/build-asan"; flags=(-DCMAKE_BUILD_TYPE=Debug -DHIXL_SANITIZE=address,undefined) ;;
    --tsan) build="$root/build-tsan"; flags=(-DCMAKE_BUILD_TYPE=Debug -DHIXL_SANITIZE=thread) ;;
    *) return 1 ;;
  esac
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
export HIXL_LOG_LEVEL=${HIXL_LOG_LEVEL:-error}
