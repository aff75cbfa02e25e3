#!/usr/bin/env python3
"""How long vLLM's own sampler takes per step, measured on a GPU.

A step ends with the sampler on one row of logits per scheduled sequence
(rows x vocab). This script runs that call from an extracted vLLM tree
(tools/vllm-oracle's loader, as sampler_peak.py does) on a GPU, with the
sampling parameters the published benchmarks send, and times it:

  greedy   temperature 0 on every row, no logprobs: what vLLM's
           benchmark_serving.py and SGLang's bench_serving sent (V0 still
           builds the sampled token's logprob and rank for every row; V1
           takes the argmax);
  random   the profile run's parameters (sampler_peak.py): top-p and top-k
           on every row, so the rows are sorted.

Per point (rows, vocab, params) it writes the median over --repeats calls
of the wall time between synchronisations (the sampler's Python included)
and the sum of its CUDA kernels' durations (torch.profiler, the median
over 3 profiled calls). The kernels are what the step model adds to a
step's GPU time; the Python part is host work the host model already
covers with its fitted per-step constants.

Usage: sampler_time.py --vllm-src /tmp/vllm-v0.5.4 --engine v0 \
           [--rows 1,8,64,256,1024] [--vocabs 32000,128256] [--out FILE]
Writes one JSON object.
"""
import importlib.util
import json
import os
import statistics
import sys
import time
import traceback


def load_sibling(name, file):
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(name, os.path.join(here, file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# sampler_peak.py holds the loader and the profile run's sampler calls.
PEAK = load_sibling("sampler_peak", "sampler_peak.py")


def v0_greedy_call(rows, vocab, dtype, tokens, device):
    """V0's sampler over rows decoding sequences at temperature 0."""
    from array import array

    from vllm.model_executor.layers.sampler import Sampler
    from vllm.model_executor.sampling_metadata import SamplingMetadata
    from vllm.sampling_params import SamplingParams
    from vllm.sequence import SequenceData, SequenceGroupMetadata

    params = SamplingParams(temperature=0.0)
    seqs, seq_lens, query_lens = [], [], []
    for g in range(rows):
        data = SequenceData(array("l", [0] * 128) if hasattr(
            SequenceData, "__struct_fields__") else [0] * 128)
        seqs.append(SequenceGroupMetadata(
            request_id=str(g), is_prompt=False, seq_data={g: data},
            sampling_params=params, block_tables=None))
        seq_lens.append(128)
        query_lens.append(1)
    meta = SamplingMetadata.prepare(seqs, seq_lens, query_lens, device, device != "cpu")
    sampler = Sampler()

    def run(logits, holder):
        holder.append(sampler(logits, meta))

    return run


def v1_greedy_call(rows, vocab, dtype, tokens, device):
    """V1's sampler with every row greedy (all_greedy), no logprobs."""
    return PEAK.v1_sampler_run(rows, device)


def kernel_us(torch, fn):
    """Sum of the CUDA kernels' durations in one call of fn, in µs."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    total = 0.0
    for ev in prof.key_averages():
        t = getattr(ev, "self_device_time_total", None)
        if t is None:
            t = getattr(ev, "self_cuda_time_total", 0.0)
        total += t
    return total


def time_point(torch, run, make_logits, device, repeats):
    held = []
    x = make_logits()
    for _ in range(3):
        held.clear()
        run(x.clone(), held)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    walls = []
    for _ in range(repeats):
        y = x.clone()
        held.clear()
        sync()
        t0 = time.perf_counter()
        run(y, held)
        sync()
        walls.append((time.perf_counter() - t0) * 1e6)
    res = {"wall_us": round(statistics.median(walls), 1),
           "wall_min_us": round(min(walls), 1)}
    if device == "cuda":
        ks = []
        try:
            for _ in range(3):
                y = x.clone()
                held.clear()
                ks.append(kernel_us(torch, lambda: run(y, held)))
            res["kernel_us"] = round(statistics.median(ks), 1)
        except Exception:  # the wall times stand without it
            res["kernel_error"] = traceback.format_exc()[-600:]
    return res


def main():
    ap = PEAK.tree_args(__doc__)
    ap.add_argument("--rows", default="1,8,32,64,128,256,512,1024")
    ap.add_argument("--vocabs", default="32000,128256,151936")
    ap.add_argument("--params", default="greedy,random")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--device", default="cuda", choices=["cpu", "cuda"])
    ap.add_argument("--out", default="-")
    args = ap.parse_args()
    import torch

    def warm_profiler():
        # The profiler imports its own helpers on first use; run it once
        # before the loader's stubs can stand in for any of them.
        kernel_us(torch, lambda: torch.ones(8, device="cuda") + 1)

    PEAK.load_sampler(args.vllm_src, args.engine, args.device,
                      before_stubs=warm_profiler if args.device == "cuda" else None)
    dtype = getattr(torch, args.dtype)
    makers = {
        ("v0", "greedy"): v0_greedy_call, ("v1", "greedy"): v1_greedy_call,
        ("v0", "random"): PEAK.v0_sampler_call, ("v1", "random"): PEAK.v1_sampler_call,
    }
    points = []
    for params in args.params.split(","):
        for vocab in [int(v) for v in args.vocabs.split(",")]:
            for rows in [int(r) for r in args.rows.split(",")]:
                gen = torch.Generator().manual_seed(rows * 7 + vocab)

                def logits():
                    return torch.randn(rows, vocab, generator=gen).to(dtype).to(args.device)

                try:
                    run = makers[(args.engine, params)](rows, vocab, dtype, 2048, args.device)
                    res = time_point(torch, run, logits, args.device, args.repeats)
                except Exception:  # one failing point must not lose the others
                    res = {"error": traceback.format_exc()[-600:]}
                res.update(params=params, rows=rows, vocab=vocab)
                points.append(res)
                print(json.dumps(res), file=sys.stderr, flush=True)
    out = {"release": args.release, "commit": args.commit, "engine": args.engine,
           "device": args.device, "logits_dtype": args.dtype,
           "torch": torch.__version__, "points": points}
    if args.device == "cuda":
        out["gpu"] = torch.cuda.get_device_name()
    PEAK.write_json(out, args.out)


if __name__ == "__main__":
    sys.exit(main())
