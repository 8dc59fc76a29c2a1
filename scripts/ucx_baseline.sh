#!/usr/bin/env bash
# ucx_baseline.sh: the UCX plug-in next to ucx_perftest, like with like: the
# same UCX_TLS, loopback, 64 KiB and 1 MiB messages, endpoints with peer
# error handling (-e: hixl's endpoints have it), one message-sized buffer on
# each side, 32 operations in flight (ucp_put_bw's window; ucp_get's is 1,
# hence -O 32; hixl_ucx_bench and hixl_bench --transport ucx: 2 batches of
# 16), medians of several runs, interleaved. hixl_ucx_bench is the plug-in
# alone, hixl_bench the whole engine (TransferAsync over a ucx link, 64 MiB
# per timed iteration). Then the time a 4 KiB x 10,000 batch takes to post.
#
# perftest runs twice: as it comes, with buffers UCX allocates in its own
# shared-memory segments (the peer maps them, so over sm a put is a plain
# copy), and with UCX_ALLOC_PRIO=heap: buffers of plain process memory, like
# the caller's memory that hixl registers, which UCX 1.13 reaches over sm
# only by software emulation through the FIFO. The ratios are against that
# one, the like-for-like baseline.
# docs/ucx.md has the figures and how to read them.
#
#   scripts/ucx_baseline.sh [build dir (build-test)] [runs (5)] [transports ("tcp sm")]
#
# Needs ucx-utils (ucx_perftest) and a build with the plug-in.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build-test}" && pwd)
runs=${2:-5}
transports=${3:-tcp sm}
bench=$build/tools/ucx_bench/hixl_ucx_bench
hixl_bench=$build/tools/hixl_bench
export HIXL_UCX_PLUGIN=$build/libhixl_ucx.so
command -v ucx_perftest >/dev/null || { echo "ucx_perftest not found (apt-get install ucx-utils)" >&2; exit 1; }
[ -x "$bench" ] || { echo "$bench not built (a build with UCX found)" >&2; exit 1; }
[ -x "$hixl_bench" ] || { echo "$hixl_bench not built" >&2; exit 1; }

median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

# One ucx_perftest run: prints its overall bandwidth (MiB/s: perftest's MB
# is 2^20 bytes).
perftest_once() {  # test size iterations [UCX_ALLOC_PRIO]
  local port=$((20000 + RANDOM % 20000)) server
  local alloc=(env)
  [ -n "${4:-}" ] && alloc=(env UCX_ALLOC_PRIO="$4")
  "${alloc[@]}" ucx_perftest -p "$port" >/dev/null 2>&1 &
  server=$!
  for _ in $(seq 100); do  # at most 10 s for the server to listen
    ss -ltn 2>/dev/null | grep -q ":$port " && break
    sleep 0.1
  done
  "${alloc[@]}" ucx_perftest 127.0.0.1 -p "$port" -t "$1" -e -O 32 -s "$2" -n "$3" -w 100 -f 2>/dev/null |
    awk 'NF == 8 && $1 ~ /^[0-9]+$/ {print $6}'
  wait "$server" || true
}

# hixl_bench over a ucx link (UCX_TLS as exported): MiB/s of one timed
# iteration of 64 MiB (after a warm-up).
hixl_once() {  # op size
  local json
  json=$(mktemp)
  "$hixl_bench" --demo --transport ucx --op "$1" --block-size "$2" --total-size 64M --iters 1 --async \
    --depth 2 --batch 16 --no-baseline --json "$json" >/dev/null 2>&1 || true
  /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print(r[0]["gbps"]*1e9/2**20 if r else 0)' \
    "$json" 2>/dev/null || echo 0
  rm -f "$json"
}

echo "# $(ucx_info -v | head -n1 | sed 's/# //'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-4s %-4s %-6s %14s %14s %14s %6s %12s %6s\n" tls op size "perftest(shm)" "perftest(heap)" \
  "hixl_ucx MiB/s" ratio "hixl MiB/s" ratio
for tls in $transports; do
  if [ "$tls" = tcp ]; then
    export UCX_TLS=tcp UCX_NET_DEVICES=lo
    devices=(--net-devices lo)
  else
    # Shared memory with peer error handling needs this on UCX 1.13.
    export UCX_TLS=$tls UCX_NET_DEVICES=all UCX_MM_ERROR_HANDLING=y
    devices=()
  fi
  for op in put get; do
    test=$([ "$op" = put ] && echo ucp_put_bw || echo ucp_get)
    for size in 65536 1048576; do
      iters=$((size == 65536 ? 5000 : 500))
      # Run by run, one of each, so that the load of a shared machine
      # changing meanwhile weighs on all three alike.
      shms=() refs=() ours=() engines=()
      for _ in $(seq "$runs"); do
        shms+=("$(perftest_once "$test" "$size" "$iters")")
        refs+=("$(perftest_once "$test" "$size" "$iters" heap)")
        ours+=("$("$bench" --tls "$tls" "${devices[@]}" --op "$op" --size "$size" --total $((size * iters)) \
                 --runs 1 | sed -n 's/.*: \([0-9.]*\) MiB\/s median.*/\1/p')")
        engines+=("$(hixl_once "$([ "$op" = put ] && echo write || echo read)" "$size")")
      done
      shm=$(printf '%s\n' "${shms[@]}" | median)
      ref=$(printf '%s\n' "${refs[@]}" | median)
      ours=$(printf '%s\n' "${ours[@]}" | median)
      engine=$(printf '%s\n' "${engines[@]}" | median)
      printf "%-4s %-4s %-6s %14.1f %14.1f %14.1f %6.2f %12.1f %6.2f\n" "$tls" "$op" "$((size / 1024))K" "$shm" "$ref" \
        "$ours" \
        "$(awk -v a="$ours" -v b="$ref" 'BEGIN {print (b > 0) ? a / b : 0}')" "$engine" \
        "$(awk -v a="$engine" -v b="$ref" 'BEGIN {print (b > 0) ? a / b : 0}')"
    done
  done
  "$bench" --tls "$tls" "${devices[@]}" --op put --post 10000 --size 4K --runs "$runs"
  unset UCX_MM_ERROR_HANDLING
done
