#!/usr/bin/env bash
# thread_safety.sh: builds the library with clang's thread-safety analysis
# (cmake -DHIXL_THREAD_SAFETY=ON, in build-thread-safety/). Every lock in
# src/ says what it guards (src/common/thread_annotations.h); clang checks
# each access and each lock taken against that, and a violation fails the
# build. So does any other warning clang gives for the library.
#
#   ./scripts/thread_safety.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/deps.sh"
command -v clang++ >/dev/null || HIXL_DEBS+=(clang)  # Debian 12: clang 14
hixl_install_deps

build="$root/build-thread-safety"
# Debug: the analysis does not depend on optimization, and -O0 builds faster.
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DHIXL_THREAD_SAFETY=ON \
  -DHIXL_BUILD_TESTS=OFF -DHIXL_BUILD_TOOLS=OFF -DHIXL_BUILD_EXAMPLES=OFF -DHIXL_BUILD_PYTHON=OFF >/dev/null
log="$build/build.log"
cmake --build "$build" -j "$(nproc)" --target hixl_obj 2>&1 | tee "$log"
if grep -q "warning:" "$log"; then
  echo "thread_safety.sh: clang warned (above); the library must build without warnings" >&2
  exit 1
fi
echo "thread-safety analysis passed ($(clang++ --version | head -n 1))"
