#!/usr/bin/env bash
# demo.sh: builds hixl, then shows two processes moving data with the HIXL
# API (the quickstart pair), then measures hixl against a plain TCP socket
# (hixl_bench --demo). Extra arguments go to hixl_bench.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/deps.sh"
hixl_install_deps

build="$root/build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHIXL_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target quickstart_server quickstart_client hixl_bench >/dev/null

echo "== quickstart: a server process and a client process =="
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
out=$(mktemp)
"$build/examples/quickstart_server" "127.0.0.1:$port" >"$out" &
server=$!
for _ in $(seq 50); do grep -q "buffer at" "$out" && break; sleep 0.1; done
addr=$(grep -o '0x[0-9a-f]*' "$out" | head -n1)
"$build/examples/quickstart_client" "127.0.0.1:$port" "$addr"
wait "$server"
cat "$out"
rm -f "$out"

echo
echo "== hixl_bench --demo: hixl over TCP against a plain TCP socket, same run =="
"$build/tools/hixl_bench" --demo "$@"
