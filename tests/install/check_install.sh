#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs a consumer
# with find_package(hixl) and again with pkg-config.
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(ls -d "$tmp"/prefix/lib*/ | head -n1)
cmake -S "$src/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/consumer/consumer"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
c++ -std=c++14 -Wall -Wextra -pedantic -Werror "$src/consumer/main.cc" $(pkg-config --cflags --libs hixl_llm_datadist) \
  -o "$tmp/consumer_pc"
LD_LIBRARY_PATH="$libdir" "$tmp/consumer_pc"
