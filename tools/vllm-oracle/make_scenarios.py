#!/usr/bin/env python3
"""Writes the oracle scenario specs (engine/testdata/oracle/scenarios).

Every scenario is deterministic (seeded); rerunning this script rewrites the
same files. Usage: make_scenarios.py OUT_DIR
"""
import json
import os
import random
import sys


def base(name, engine, **kw):
    sc = {"name": name, "engine": engine, "block_size": 16,
          "num_gpu_blocks": 64, "num_cpu_blocks": 0, "max_num_seqs": 16,
          "max_num_batched_tokens": 256, "max_model_len": 2048,
          "chunked_prefill": False, "preemption_mode": "",
          "delay_factor": 0.0, "prefix_caching": False, "step_seconds": 1,
          "trace_every": 1}
    sc.update(kw)
    return sc


def reqs(n, prompt, output, seed, arrive_every=0.0, start_id=1,
         prefix_groups=0, prefix_len=0):
    """n requests; prompt/output are ints or (lo, hi) ranges; arrivals
    every arrive_every seconds on average (0: all at once, offline)."""
    rng = random.Random(seed)
    out, t = [], 0.0
    for i in range(n):
        p = prompt if isinstance(prompt, int) else rng.randint(*prompt)
        o = output if isinstance(output, int) else rng.randint(*output)
        r = {"id": start_id + i, "prompt_len": p, "output_len": o}
        if arrive_every:
            t += rng.choice([0, 0, 1, 1, 2, 3]) * arrive_every
            r["arrival"] = int(t)
        if prefix_groups:
            r["prefix_group"] = rng.randrange(prefix_groups)
            r["prefix_len"] = min(prefix_len, p)
        out.append(r)
    return out


def scenarios():
    s = []
    # --- V0, prefill-first (chunked prefill off) -------------------------
    s.append(base("v0_default_prefill_first", "v0", block_size=4,
                  num_gpu_blocks=32, max_num_seqs=4, max_num_batched_tokens=32,
                  max_model_len=32, requests=[
                      {"id": 1, "prompt_len": 6, "output_len": 3},
                      {"id": 2, "prompt_len": 5, "output_len": 3},
                      {"id": 3, "prompt_len": 7, "output_len": 2, "arrival": 2}]))
    s.append(base("v0_default_arrivals", "v0", num_gpu_blocks=200,
                  max_num_batched_tokens=2048,
                  requests=reqs(60, (20, 300), (5, 60), 1, arrive_every=1)))
    s.append(base("v0_default_recompute_tight", "v0", num_gpu_blocks=40,
                  max_num_batched_tokens=2048,
                  requests=reqs(30, (30, 120), (20, 120), 2)))
    s.append(base("v0_default_swap_tight", "v0", num_gpu_blocks=40,
                  num_cpu_blocks=200, preemption_mode="swap",
                  max_num_batched_tokens=2048,
                  requests=reqs(30, (30, 120), (20, 120), 2)))
    s.append(base("v0_default_swap_exhausted", "v0", num_gpu_blocks=40,
                  num_cpu_blocks=6, preemption_mode="swap",
                  max_num_batched_tokens=2048,
                  requests=reqs(30, (30, 120), (20, 120), 2)))
    s.append(base("v0_default_never_fits", "v0", block_size=4,
                  num_gpu_blocks=8, max_num_batched_tokens=64,
                  max_model_len=64, requests=[
                      {"id": 1, "prompt_len": 40, "output_len": 2},
                      {"id": 2, "prompt_len": 8, "output_len": 4},
                      {"id": 3, "prompt_len": 33, "output_len": 2}]))
    s.append(base("v0_delay_factor", "v0", num_gpu_blocks=300,
                  max_num_batched_tokens=2048, delay_factor=0.5,
                  step_seconds=1,
                  requests=reqs(40, (10, 200), (4, 30), 3, arrive_every=1)))
    s.append(base("v0_delay_factor_chunked", "v0", num_gpu_blocks=300,
                  max_num_batched_tokens=128, chunked_prefill=True,
                  delay_factor=2.0,
                  requests=reqs(40, (10, 200), (4, 30), 4, arrive_every=1)))
    s.append(base("v0_prefix_cache", "v0", num_gpu_blocks=60,
                  max_num_batched_tokens=2048, prefix_caching=True,
                  requests=reqs(50, (40, 160), (4, 40), 5, arrive_every=1,
                                prefix_groups=3, prefix_len=64)))
    s.append(base("v0_prefix_cache_chunked", "v0", num_gpu_blocks=60,
                  max_num_batched_tokens=96, chunked_prefill=True,
                  prefix_caching=True,
                  requests=reqs(50, (40, 160), (4, 40), 6, arrive_every=1,
                                prefix_groups=3, prefix_len=64)))
    # --- V0, chunked prefill ---------------------------------------------
    s.append(base("v0_chunked_mixing", "v0", block_size=4, num_gpu_blocks=32,
                  max_num_seqs=4, max_num_batched_tokens=8, max_model_len=64,
                  chunked_prefill=True, requests=[
                      {"id": 1, "prompt_len": 3, "output_len": 6},
                      {"id": 2, "prompt_len": 20, "output_len": 2,
                       "arrival": 1}]))
    s.append(base("v0_chunked_long_prompts", "v0", num_gpu_blocks=400,
                  max_num_batched_tokens=64, chunked_prefill=True,
                  max_model_len=4096,
                  requests=reqs(8, (900, 2000), (3, 20), 7, arrive_every=2)))
    s.append(base("v0_chunked_arrivals", "v0", num_gpu_blocks=150,
                  max_num_batched_tokens=128, chunked_prefill=True,
                  requests=reqs(60, (20, 300), (5, 60), 8, arrive_every=1)))
    s.append(base("v0_chunked_swap_exhausted", "v0", num_gpu_blocks=40,
                  num_cpu_blocks=10, preemption_mode="swap",
                  max_num_batched_tokens=64, chunked_prefill=True,
                  requests=reqs(30, (30, 120), (20, 120), 9)))
    # r3's prefill is swapped out mid-way; vLLM swaps in unchunked, so its
    # 26-token remainder never fits the 6-token budget: vLLM livelocks.
    s.append(base("v0_chunked_swap_prefill_over_budget", "v0", block_size=4,
                  num_gpu_blocks=12, num_cpu_blocks=64, max_num_seqs=4,
                  max_num_batched_tokens=6, max_model_len=128,
                  chunked_prefill=True, preemption_mode="swap", requests=[
                      {"id": 1, "prompt_len": 4, "output_len": 24},
                      {"id": 2, "prompt_len": 4, "output_len": 20},
                      {"id": 3, "prompt_len": 30, "output_len": 2,
                       "arrival": 1},
                      {"id": 4, "prompt_len": 6, "output_len": 2,
                       "arrival": 3}]))
    # The "swap vs recompute" experiment (issue 8), scaled down: offline
    # prompts of 128 in / 128 out, max_num_seqs = max_num_batched_tokens.
    for blocks in (160, 400):
        for mode in ("recompute", "swap"):
            for m in (32, 128, 512, 1024):
                s.append(base(f"v0_heavy_{mode}_b{blocks}_s{m}", "v0",
                              num_gpu_blocks=blocks,
                              num_cpu_blocks=4 * blocks if mode == "swap" else 0,
                              preemption_mode=mode, max_num_seqs=m,
                              max_num_batched_tokens=m, chunked_prefill=True,
                              requests=reqs(200, 128, 128, 10)))
    # The experiment at full size (1000 x 512/512): only step counts and
    # every 100th step are kept.
    for mode in ("recompute", "swap"):
        for m in (256, 1024):
            s.append(base(f"v0_offline1000_{mode}_s{m}", "v0",
                          num_gpu_blocks=2000,
                          num_cpu_blocks=8000 if mode == "swap" else 0,
                          preemption_mode=mode, max_num_seqs=m,
                          max_num_batched_tokens=m, chunked_prefill=True,
                          trace_every=100,
                          requests=reqs(1000, 512, 512, 11)))
    # --- V1 ----------------------------------------------------------------
    s.append(base("v1_basic", "v1", block_size=4, num_gpu_blocks=32,
                  max_num_seqs=4, max_num_batched_tokens=8, max_model_len=64,
                  requests=[{"id": 1, "prompt_len": 3, "output_len": 6},
                            {"id": 2, "prompt_len": 20, "output_len": 2,
                             "arrival": 1}]))
    s.append(base("v1_token_budget", "v1", num_gpu_blocks=400,
                  max_num_batched_tokens=100, max_num_seqs=8,
                  requests=reqs(40, (20, 400), (5, 40), 12, arrive_every=1)))
    s.append(base("v1_preempt", "v1", num_gpu_blocks=40,
                  max_num_batched_tokens=256,
                  requests=reqs(30, (30, 120), (20, 120), 13)))
    s.append(base("v1_long_prompts", "v1", num_gpu_blocks=500,
                  max_num_batched_tokens=64, max_model_len=4096,
                  requests=reqs(8, (900, 2000), (3, 20), 14, arrive_every=2)))
    s.append(base("v1_prefix_cache", "v1", num_gpu_blocks=60,
                  max_num_batched_tokens=256, prefix_caching=True,
                  requests=reqs(50, (40, 160), (4, 40), 15, arrive_every=1,
                                prefix_groups=3, prefix_len=64)))
    s.append(base("v1_prefix_cache_evict", "v1", num_gpu_blocks=30,
                  max_num_batched_tokens=128, prefix_caching=True,
                  requests=reqs(60, (40, 200), (4, 60), 16, arrive_every=1,
                                prefix_groups=6, prefix_len=80)))
    for m in (32, 256, 1024):
        s.append(base(f"v1_heavy_s{m}", "v1", num_gpu_blocks=160,
                      max_num_seqs=m, max_num_batched_tokens=max(m, 256),
                      requests=reqs(200, 128, 128, 10)))
    s.append(base("v1_arrivals", "v1", num_gpu_blocks=150,
                  max_num_batched_tokens=128,
                  requests=reqs(60, (20, 300), (5, 60), 17, arrive_every=1)))
    s.append(base("v1_max_num_seqs", "v1", num_gpu_blocks=300, max_num_seqs=3,
                  max_num_batched_tokens=512,
                  requests=reqs(20, (10, 100), (5, 30), 18)))
    s.append(base("v1_prefix_cache_preempt", "v1", num_gpu_blocks=40,
                  max_num_batched_tokens=256, prefix_caching=True,
                  requests=reqs(40, (60, 160), (20, 100), 19,
                                prefix_groups=2, prefix_len=96)))
    s.append(base("v1_offline1000_s1024", "v1", num_gpu_blocks=2000,
                  max_num_seqs=1024, max_num_batched_tokens=2048,
                  trace_every=100, requests=reqs(1000, 512, 512, 11)))
    s.append(base("v1_offline1000_s256", "v1", num_gpu_blocks=2000,
                  max_num_seqs=256, max_num_batched_tokens=2048,
                  trace_every=100, requests=reqs(1000, 512, 512, 11)))
    return s


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for sc in scenarios():
        with open(os.path.join(out, sc["name"] + ".json"), "w") as f:
            json.dump(sc, f, separators=(",", ":"))
            f.write("\n")


if __name__ == "__main__":
    main()
