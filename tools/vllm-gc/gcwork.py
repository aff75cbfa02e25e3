#!/usr/bin/env python3
"""Counts the work CPython's cyclic collector does for vLLM's own per-step
host path, by release.

It runs the same steady-decode loop as tools/vllm-hosttime (vLLM's real
scheduler and output path from an extracted source tree) with the
collector on, and records per decode step:

  promoted   objects that survive a collection of the middle generation
             and so enter the oldest one: CPython runs a full collection
             once these exceed a quarter of the objects the last full
             collection left (gcmodule.c, long_lived_pending), so they set
             how often a full collection comes;
  young_us   time spent in collections of the two young generations.

and, once per run, the cost of a full collection per tracked object over
the process's own heap (torch and vLLM's modules imported, nothing frozen):

  full_ns_per_object

Full collections themselves are held off while steps are counted
(threshold of the oldest generation raised), so they neither perturb the
counts nor depend on the harness's heap.

Usage: gcwork.py --vllm-src /tmp/vllm-v0.6.1.post2 --release v0.6.1.post2 \\
           --engine v0 --out /tmp/gc.json
"""
import argparse
import gc
import json
import os
import platform
import sys
import time

SIZES = [1, 4, 16, 64, 256, 1024]
# Decode steps counted per size: enough sequence-steps that a small batch
# sees many collections of the middle generation (one per ~7,000 net
# allocations), within the 4,096-token context the harness allows.
def decode_steps(n):
    return min(3600, max(400, 20000 // n))


def load_hosttime():
    """tools/vllm-hosttime's harness, whose loop this counts."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "vllm-hosttime"))
    import hosttime
    return hosttime


class Collector:
    """Watches the collector through gc.callbacks."""

    def __init__(self):
        self.promoted = 0
        self.young_ns = 0
        self._young = 0
        self._t0 = 0

    def __call__(self, phase, info):
        gen = info["generation"]
        if phase == "start":
            if gen == 1:
                # What a collection of generation 1 looks at: generations
                # 0 and 1; its survivors move to generation 2.
                self._young = len(gc.get_objects(0)) + len(gc.get_objects(1))
            self._t0 = time.perf_counter_ns()
            return
        dt = time.perf_counter_ns() - self._t0
        if gen < 2:
            self.young_ns += dt
        if gen == 1:
            # The list get_objects made is garbage by now, not a survivor.
            self.promoted += max(self._young - info["collected"] - 2, 0)


def full_collection_ns_per_object(passes=5):
    gc.collect()
    n = len(gc.get_objects())
    best = None
    for _ in range(passes):
        t0 = time.perf_counter_ns()
        gc.collect()
        dt = time.perf_counter_ns() - t0
        best = dt if best is None else min(best, dt)
    return n, best / n


def main():
    host = load_hosttime()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    host.tree_args(ap, SIZES)
    args = ap.parse_args()
    measure = host.load_tree(args.vllm_src, args.engine)
    heap_objects, full_ns = full_collection_ns_per_object()

    watch = Collector()
    counted = {"steps": 0, "promoted": 0, "young_ns": 0}

    def hook(decode):
        if not decode:
            return
        if counted["steps"] == 0:
            counted["promoted"] = -watch.promoted
            counted["young_ns"] = -watch.young_ns
        if counted["steps"] < counted["want"]:
            counted["steps"] += 1
            if counted["steps"] == counted["want"]:
                counted["promoted"] += watch.promoted
                counted["young_ns"] += watch.young_ns

    host.STEP_HOOK = hook
    rows = []
    old = gc.get_threshold()
    for n in [int(s) for s in args.sizes.split(",")]:
        gc.collect()
        gc.freeze()  # the harness's own heap stays out of the counts
        gc.set_threshold(old[0], old[1], 1 << 30)
        steps = decode_steps(n)
        host.MEASURED_STEPS = steps + 2
        counted.update(steps=0, promoted=0, young_ns=0, want=steps)
        gc.callbacks.append(watch)
        try:
            measure(n)
        finally:
            gc.callbacks.remove(watch)
            gc.set_threshold(*old)
            gc.unfreeze()
        if counted["steps"] < steps:
            raise RuntimeError(f"{n} sequences: {counted['steps']} decode steps")
        row = {"seqs": n, "steps": steps,
               "promoted_per_step": round(counted["promoted"] / steps, 2),
               "young_us_per_step": round(counted["young_ns"] / steps / 1000, 2)}
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    res = {"release": args.release, "commit": args.commit,
           "engine": args.engine, "cpu": host.cpu_model(),
           "python": platform.python_version(),
           "heap_objects": heap_objects,
           "full_ns_per_object": round(full_ns, 1), "rows": rows}
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
