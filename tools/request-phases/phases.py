#!/usr/bin/env python3
"""Compare the step-level phases of benchmark result files that keep every
request's times: vLLM's benchmark_serving.py --save-result JSON (ttfts, itls),
and servebench's (sim --save-detailed writes the same keys).

For each file it prints:
  - the first request's TTFT: it reached an idle server, so with prompts of one
    length it times one prompt's prefill alone (plus the request path);
  - the median of the first request's first N inter-token gaps (--mixed, 30 by
    default): while later prompts are still being prefilled, each gap is a step
    that mixes a prefill chunk with the decodes;
  - the median of its last M gaps (--late, 300 by default): decode-only steps
    once every prompt is in.

Give the published file first and sim's after it to see their ratio. Only
figures are read; nothing is written.

    python3 tools/request-phases/phases.py published.json sim.json
"""
import argparse
import json
import statistics
import sys


def phases(path, mixed, late):
    with open(path) as f:
        d = json.load(f)
    ttfts, itls = d.get("ttfts"), d.get("itls")
    if not ttfts or not itls or not itls[0]:
        raise SystemExit(f"{path}: no per-request ttfts/itls; save the result with --save-result (vLLM) or --save-detailed (servebench)")
    first = itls[0]
    return {
        "first_ttft_ms": ttfts[0] * 1e3,
        "mixed_step_ms": statistics.median(first[:mixed]) * 1e3,
        "late_step_ms": statistics.median(first[-late:]) * 1e3,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="result JSON files; the first is the reference for ratios")
    ap.add_argument("--mixed", type=int, default=30, help="first-request gaps counted as mixed steps")
    ap.add_argument("--late", type=int, default=300, help="first-request gaps counted as decode steps, from the end")
    a = ap.parse_args()
    rows = [(p, phases(p, a.mixed, a.late)) for p in a.files]
    ref = rows[0][1]
    keys = ("first_ttft_ms", "mixed_step_ms", "late_step_ms")
    print("%-60s %14s %14s %14s" % ("file", *keys))
    for p, r in rows:
        print("%-60s %14.1f %14.1f %14.1f" % (p[-60:], *(r[k] for k in keys)))
        if r is not ref:
            print("%-60s %14.2f %14.2f %14.2f" % ("  reference / this", *(ref[k] / r[k] for k in keys)))


if __name__ == "__main__":
    sys.exit(main())
