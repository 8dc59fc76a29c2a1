#!/usr/bin/python3
"""Checks a hixl_bench JSON report against the schema in docs/performance.md.

    check_bench_json.py results.json [--suite] [--transport tcp ...]

Exits 0 when the report is well formed, 1 with every problem listed
otherwise. --suite also asks for what `hixl_bench --suite` must produce:
sync results of both ops for every available transport, an async result,
latency and connect figures. --transport NAME asks for NAME to be
available and to have results. Standard library only.
"""
import argparse
import json
import math
import sys

OPS = {"read", "write"}
MODES = {"sync", "async"}
LAYOUTS = {"scattered", "contiguous", "one-block"}


class Checker:
    def __init__(self):
        self.errors = []

    def fail(self, where, msg):
        self.errors.append(f"{where}: {msg}")

    def key(self, obj, name, types, where):
        """obj[name] exists and has one of `types` (bool is not an int)."""
        if not isinstance(obj, dict) or name not in obj:
            self.fail(where, f"missing key '{name}'")
            return None
        v = obj[name]
        if isinstance(v, bool) and bool not in types:
            self.fail(where, f"'{name}' is a bool, expected {types}")
            return None
        if not isinstance(v, types):
            self.fail(where, f"'{name}'={v!r} is not {types}")
            return None
        return v

    def positive_int(self, obj, name, where):
        v = self.key(obj, name, (int,), where)
        if v is not None and v <= 0:
            self.fail(where, f"'{name}'={v} is not > 0")
        return v

    def positive_num(self, obj, name, where):
        v = self.key(obj, name, (int, float), where)
        if v is not None and not (math.isfinite(v) and v > 0):
            self.fail(where, f"'{name}'={v!r} is not a finite number > 0")
            return None
        return v

    def one_of(self, obj, name, allowed, where):
        v = self.key(obj, name, (str,), where)
        if v is not None and v not in allowed:
            self.fail(where, f"'{name}'={v!r} is not one of {sorted(allowed)}")
        return v

    def baseline_figures(self, obj, names, where):
        """Finite positive figures when there is a baseline, null without."""
        if obj.get("baseline") == "none":
            for n in names:
                if obj.get(n, None) is not None:
                    self.fail(where, f"'{n}' must be null without a baseline")
            return None
        return [self.positive_num(obj, n, where) for n in names]

    def check(self, doc, suite, transports):
        if not isinstance(doc, dict):
            self.fail("top", "not a JSON object")
            return
        if doc.get("tool") != "hixl_bench":
            self.fail("top", f"tool={doc.get('tool')!r}, expected 'hixl_bench'")
        if doc.get("version") != 1:
            self.fail("top", f"version={doc.get('version')!r}, expected 1")
        host = self.key(doc, "host", (dict,), "top")
        if host is not None:
            self.positive_int(host, "cpus", "host")
            self.key(host, "kernel", (str,), "host")
        config = self.key(doc, "config", (dict,), "top") or {}
        repeat = config.get("repeat", 1)
        total = config.get("total_size")

        available = {}
        for i, t in enumerate(self.key(doc, "transports", (list,), "top") or []):
            where = f"transports[{i}]"
            name = self.key(t, "name", (str,), where)
            ok = self.key(t, "available", (bool,), where)
            if ok is False:
                self.key(t, "reason", (str,), where)
            if name is not None and ok is not None:
                available[name] = ok

        results = self.key(doc, "results", (list,), "top") or []
        seen = set()
        for i, r in enumerate(results):
            where = f"results[{i}]"
            transport = self.key(r, "transport", (str,), where)
            if transport is not None and available.get(transport) is not True:
                self.fail(where, f"transport {transport!r} has results but is not listed as available")
            op = self.one_of(r, "op", OPS, where)
            mode = self.one_of(r, "mode", MODES, where)
            if "layout" in r:
                self.one_of(r, "layout", LAYOUTS, where)
            for n in ("block", "batch", "threads", "depth", "bytes", "iters"):
                self.positive_int(r, n, where)
            block, threads, nbytes = r.get("block"), r.get("threads"), r.get("bytes")
            if all(isinstance(v, int) and v > 0 for v in (block, threads, nbytes, total, repeat)):
                # Every whole block of each thread's slice, once per pass.
                want = repeat * threads * (total // threads // block) * block
                if nbytes != want:
                    self.fail(where, f"bytes {nbytes} != {want} ({repeat} pass(es) over {total} bytes)")
            if mode == "async":
                self.positive_num(r, "post_max_us", where)
            elif r.get("post_max_us") is not None:
                self.fail(where, "'post_max_us' must be null for a sync result")
            gbps = self.positive_num(r, "gbps", where)
            base = self.one_of(r, "baseline", {"tcp", "memcpy", "none"}, where)
            figs = self.baseline_figures(r, ("baseline_gbps", "ratio"), where)
            if gbps and figs and all(figs):
                bg, ratio = figs
                if abs(ratio - gbps / bg) > 0.01 * ratio + 1e-3:
                    self.fail(where, f"ratio {ratio} != gbps/baseline_gbps {gbps / bg:.4f}")
            if base == "tcp" and transport not in (None, "tcp"):
                self.fail(where, f"transport {transport} measured against the tcp baseline")
            seen.add((transport, op, mode))

        latency = self.key(doc, "latency", (list,), "top") or []
        for i, l in enumerate(latency):
            where = f"latency[{i}]"
            self.key(l, "transport", (str,), where)
            self.positive_int(l, "size", where)
            p50 = self.positive_num(l, "p50_us", where)
            p99 = self.positive_num(l, "p99_us", where)
            if p50 and p99 and p99 < p50:
                self.fail(where, f"p99_us {p99} < p50_us {p50}")
            self.baseline_figures(l, ("baseline_p50_us", "baseline_p99_us", "ratio_p50"), where)

        connect = self.key(doc, "connect", (list,), "top") or []
        for i, c in enumerate(connect):
            where = f"connect[{i}]"
            self.key(c, "transport", (str,), where)
            p50 = self.positive_num(c, "p50_ms", where)
            p99 = self.positive_num(c, "p99_ms", where)
            if p50 and p99 and p99 < p50:
                self.fail(where, f"p99_ms {p99} < p50_ms {p50}")

        for i, g in enumerate(doc.get("goals", [])):
            where = f"goals[{i}]"
            for n in ("name", "target", "measured"):
                self.key(g, n, (str,), where)
            self.key(g, "met", (bool,), where)

        for t in transports:
            if available.get(t) is not True:
                self.fail("transports", f"{t} is not available")
            elif not any(s[0] == t for s in seen):
                self.fail("results", f"no result for transport {t}")
        if suite:
            if not results:
                self.fail("results", "empty")
            for t, ok in available.items():
                if not ok:
                    continue
                for op in OPS:
                    if (t, op, "sync") not in seen:
                        self.fail("results", f"no sync {op} result for {t}")
                if not any(s[0] == t and s[2] == "async" for s in seen):
                    self.fail("results", f"no async result for {t}")
            if not latency:
                self.fail("latency", "empty")
            if not connect:
                self.fail("connect", "empty")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json_file")
    ap.add_argument("--suite", action="store_true", help="require what --suite produces")
    ap.add_argument("--transport", action="append", default=[], help="require this transport's results")
    args = ap.parse_args()
    try:
        with open(args.json_file) as f:
            # NaN and Infinity are not JSON; refuse them rather than let
            # Python's parser accept them.
            doc = json.load(f, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"non-JSON constant {c}")))
    except (OSError, ValueError) as e:
        print(f"{args.json_file}: {e}", file=sys.stderr)
        return 1
    c = Checker()
    c.check(doc, args.suite, args.transport)
    if c.errors:
        for e in c.errors:
            print(f"{args.json_file}: {e}", file=sys.stderr)
        return 1
    print(f"{args.json_file}: OK ({len(doc['results'])} results, {len(doc['latency'])} latency, "
          f"{len(doc['connect'])} connect)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
