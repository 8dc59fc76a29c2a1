#!/usr/bin/env bash
# ucx_baseline.sh: the UCX plug-in next to ucx_perftest, like with like: the
# same UCX_TLS, loopback, 64 KiB and 1 MiB messages, endpoints with peer
# error handling (-e: hixl's endpoints have it), one message-sized buffer on
# each side, medians of several runs, interleaved. In flight: perftest's
# window of 32 operations (ucp_put_bw's; ucp_get's is 1, hence -O 32); for
# gets hixl_ucx_bench and hixl_bench --transport ucx keep 2 batches of 16,
# for puts 8 batches of 16. A get is done when its data has arrived on
# either side, but perftest counts a put done once UCX has handed it to the
# transport (over tcp: to the socket, whose buffer holds megabytes more),
# while a hixl batch of puts is done when its flush says the target has the
# data: with 32 puts in flight each batch's flush round trip drains the
# pipe (measured: 2 x 16 gave 0.5-0.9x of what 8 x 16 did, 64 KiB puts
# over tcp). hixl_ucx_bench is the plug-in alone, hixl_bench the whole
# engine (TransferAsync over a ucx link), timing as many messages as
# perftest does, each request's 16 in the one message-sized block of each
# side (timing 64 MiB, 50 ms at 1 MiB, over 16 messages' worth of buffer
# made 1 MiB gets bimodal: 600-840 or 1100-1577 MiB/s). The ratios are
# medians of per-run ratios: each run of hixl is divided by the perftest run
# next to it, so that the load of a noisy machine, which moves every figure
# by up to 2x from one minute to the next here, weighs on both sides of each
# ratio alike.
#
# Then a 4 KiB x 10,000 batch of puts: how long the caller's call takes
# (the plug-in's batch_post, and the engine's TransferAsync), how long the
# progress thread takes to hand the 10,000 puts to UCX and until all are
# done, against the time ucx_perftest takes for 10,000 4 KiB puts (window
# 32) on the same transport.
#
# perftest runs twice: as it comes, with buffers UCX allocates in its own
# shared-memory segments (the peer maps them, so over sm a put is a plain
# copy), and with UCX_ALLOC_PRIO=heap: buffers of plain process memory, like
# the caller's memory that hixl registers, which UCX 1.13 reaches over sm
# only by software emulation through the FIFO. The ratios are against that
# one, the like-for-like baseline.
# docs/ucx.md has the figures and how to read them.
#
#   scripts/ucx_baseline.sh [build dir (build-test)] [runs (9)] [transports ("tcp sm")]
#
# Needs ucx-utils (ucx_perftest) and a build with the plug-in.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build-test}" && pwd)
runs=${2:-9}
transports=${3:-tcp sm}
bench=$build/tools/ucx_bench/hixl_ucx_bench
hixl_bench=$build/tools/hixl_bench
export HIXL_UCX_PLUGIN=$build/libhixl_ucx.so
command -v ucx_perftest >/dev/null || { echo "ucx_perftest not found (apt-get install ucx-utils)" >&2; exit 1; }
[ -x "$bench" ] || { echo "$bench not built (a build with UCX found)" >&2; exit 1; }
[ -x "$hixl_bench" ] || { echo "$hixl_bench not built" >&2; exit 1; }

median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

# One ucx_perftest run: prints its overall bandwidth (MiB/s: perftest's MB
# is 2^20 bytes), or with column 4 the overall time per message (us).
perftest_once() {  # test size iterations [UCX_ALLOC_PRIO] [column (6)]
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
    awk -v col="${5:-6}" 'NF == 8 && $1 ~ /^[0-9]+$/ {print $col}'
  wait "$server" || true
}

# hixl_bench over a ucx link (UCX_TLS as exported): MiB/s of one timed
# iteration (after a warm-up) of as many messages as perftest's run, in
# TransferAsync requests of 16 that each name the same message-sized block
# on both sides (--layout one-block), as perftest's one buffer.
hixl_once() {  # op size depth messages
  local json
  json=$(mktemp)
  "$hixl_bench" --demo --transport ucx --op "$1" --block-size "$2" --total-size $((16 * $2)) \
    --repeat $(($4 / 16)) --iters 1 --async --depth "$3" --batch 16 --layout one-block --no-baseline \
    --json "$json" >/dev/null 2>&1 || true
  /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print(r[0]["gbps"]*1e9/2**20 if r else 0)' \
    "$json" 2>/dev/null || echo 0
  rm -f "$json"
}

# hixl_bench over a ucx link: one 4 KiB x 10,000 WRITE request, 5 times:
# "<longest TransferAsync call, ms> <whole request, ms>" (medians).
hixl_post() {
  local json
  json=$(mktemp)
  "$hixl_bench" --demo --transport ucx --op write --block-size 4K --total-size 40000K --batch 10000 --async \
    --depth 1 --iters 5 --no-baseline --json "$json" >/dev/null 2>&1 || true
  /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]
print("%.3f %.1f" % (r[0]["post_max_us"] / 1e3, r[0]["bytes"] / r[0]["gbps"] / 1e6) if r else "0 0")' \
    "$json" 2>/dev/null || echo "0 0"
  rm -f "$json"
}

# Median of the per-run ratios a[i] / b[i].
ratio_median() {  # "a1 a2 ..." "b1 b2 ..."
  paste <(tr ' ' '\n' <<<"$1") <(tr ' ' '\n' <<<"$2") | awk '$2 > 0 {print $1 / $2}' | median
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
    hop=$([ "$op" = put ] && echo write || echo read)
    depth=$([ "$op" = put ] && echo 8 || echo 2)  # batches of 16 in flight (see the top)
    for size in 65536 1048576; do
      iters=$((size == 65536 ? 5000 : 500))
      # Run by run, one of each, so that the load of a shared machine
      # changing meanwhile weighs on all three alike.
      shms=() refs=() ours=() engines=()
      for _ in $(seq "$runs"); do
        shms+=("$(perftest_once "$test" "$size" "$iters")")
        refs+=("$(perftest_once "$test" "$size" "$iters" heap)")
        ours+=("$("$bench" --tls "$tls" "${devices[@]}" --op "$op" --size "$size" --total $((size * iters)) \
                 --depth "$depth" --runs 1 | sed -n 's/.*: \([0-9.]*\) MiB\/s median.*/\1/p')")
        engines+=("$(hixl_once "$hop" "$size" "$depth" "$iters")")
      done
      printf "%-4s %-4s %-6s %14.1f %14.1f %14.1f %6.2f %12.1f %6.2f\n" "$tls" "$op" "$((size / 1024))K" \
        "$(printf '%s\n' "${shms[@]}" | median)" "$(printf '%s\n' "${refs[@]}" | median)" \
        "$(printf '%s\n' "${ours[@]}" | median)" "$(ratio_median "${ours[*]}" "${refs[*]}")" \
        "$(printf '%s\n' "${engines[@]}" | median)" "$(ratio_median "${engines[*]}" "${refs[*]}")"
    done
  done
  "$bench" --tls "$tls" "${devices[@]}" --op put --post 10000 --size 4K --runs "$runs"
  read -r call whole <<<"$(hixl_post)"
  per_msg=$(for _ in $(seq "$runs"); do perftest_once ucp_put_bw 4096 10000 heap 4; done | median)
  printf "%s put 4K x 10000: engine TransferAsync returned after %s ms, request done in %s ms; ucx_perftest: 10,000 puts in %.1f ms\n" \
    "$tls" "$call" "$whole" "$(awk -v u="$per_msg" 'BEGIN {print u * 10000 / 1000}')"
  unset UCX_MM_ERROR_HANDLING
done
