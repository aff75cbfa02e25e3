#!/usr/bin/env python3
"""The memory vLLM's sampler holds at the profile run's peak, measured.

vLLM sizes its KV cache from a profile run: a dummy batch of
max_num_batched_tokens tokens over max_num_seqs sequences, then the
sampler on one row of logits per sequence, with the profile's sampling
parameters (V0: top_p 0.99 and top_k vocab-1 on every sequence; V1:
temperature 0.5, top_p 0.9, top_k vocab-1, penalties present but off).
This script runs that sampler call from an extracted vLLM tree on CPU
(tools/vllm-oracle's loader stubs what the path never calls), with the
logits in the model's dtype as the LM head returns them, and records every
allocation and free of the CPU allocator (torch.profiler's memory events):
the peak of live tensor bytes, counting the input logits, divided by
rows x vocab. The GPU path differs only where a kernel differs (V0 and V1
on CUDA run the same PyTorch ops; V1 would use FlashInfer's sampler where
installed, which vLLM's wheels of these releases do not ship).

Usage: sampler_peak.py --vllm-src /tmp/vllm-v0.5.4 --engine v0 \
           [--rows 256] [--vocab 32000] [--dtype bfloat16] [--out FILE]
Writes one JSON object (to stdout by default).
"""
import argparse
from array import array
import importlib.util
import json
import os
import sys


def load_oracle():
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "vllm_oracle", os.path.join(here, "oracle.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def peak_bytes(fn, live_before):
    """Runs fn and returns the peak of live tensor storage bytes during
    it: every tensor an ATen op returns is tracked (views share their
    base's storage, counted once) until the last tensor on that storage is
    garbage; live_before are tensors alive on entry (the logits)."""
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    refs, sizes, made_by = {}, {}, {}
    state = {"live": 0, "peak": 0, "at_peak": []}

    def release(ptr):
        refs[ptr] -= 1
        if refs[ptr] == 0:
            state["live"] -= sizes.pop(ptr)
            del refs[ptr], made_by[ptr]

    def track(t, op="input"):
        st = t.storage()
        ptr, size = st.data_ptr(), st.nbytes()
        if size == 0:
            return
        if ptr not in refs:
            refs[ptr], sizes[ptr], made_by[ptr] = 0, size, op
            state["live"] += size
            if state["live"] > state["peak"]:
                state["peak"] = state["live"]
                state["at_peak"] = sorted(
                    (f"{made_by[p]} {sizes[p]}" for p in sizes
                     if sizes[p] >= 1 << 16))
        refs[ptr] += 1
        weakref.finalize(t, release, ptr)

    class Track(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor):
                    track(t, str(func))
            return out

    for t in live_before:
        track(t)
    state["peak"] = state["live"]
    with Track():
        fn()
    return state["peak"], state["at_peak"]


def v0_sampler_call(rows, vocab, dtype, max_num_batched_tokens):
    import torch
    from vllm.model_executor.layers.sampler import Sampler
    from vllm.model_executor.sampling_metadata import SamplingMetadata
    from vllm.sampling_params import SamplingParams
    from vllm.sequence import SequenceData, SequenceGroupMetadata

    params = SamplingParams(top_p=0.99, top_k=vocab - 1)
    seqs, seq_lens = [], []
    for g in range(rows):
        n = (max_num_batched_tokens // rows +
             (g < max_num_batched_tokens % rows))
        # 0.6 keeps token IDs in array("l"), 0.5 in a list.
        data = SequenceData(array("l", [0] * n) if hasattr(
            SequenceData, "__struct_fields__") else [0] * n)
        seqs.append(SequenceGroupMetadata(
            request_id=str(g), is_prompt=True, seq_data={g: data},
            sampling_params=params, block_tables=None))
        seq_lens.append(n)
    meta = SamplingMetadata.prepare(seqs, seq_lens, seq_lens, "cpu", False)
    sampler = Sampler()

    def run(logits, holder):
        holder.append(sampler(logits, meta))

    return run


def v1_sampler_call(rows, vocab, dtype, max_num_batched_tokens):
    import torch
    from vllm.v1.sample.metadata import SamplingMetadata
    from vllm.v1.sample.sampler import Sampler

    def full(v):
        return torch.full((rows,), v)

    fields = dict(
        temperature=full(0.5), all_greedy=False, all_random=False,
        top_p=full(0.9), top_k=full(vocab - 1), min_p=None, generators={},
        max_num_logprobs=None, no_penalties=True, prompt_token_ids=None,
        frequency_penalties=full(0.1), presence_penalties=full(0.1),
        repetition_penalties=full(0.1),
        output_token_ids=[[] for _ in range(rows)], min_tokens={},
        logit_bias=[None for _ in range(rows)], allowed_token_ids_mask=None,
        bad_words_token_ids={})
    known = getattr(SamplingMetadata, "__dataclass_fields__", fields)
    meta = SamplingMetadata(**{k: v for k, v in fields.items() if k in known})
    sampler = Sampler()

    def run(logits, holder):
        holder.append(sampler(logits=logits, sampling_metadata=meta))

    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vllm-src", required=True)
    ap.add_argument("--release", default="")
    ap.add_argument("--commit", default="")
    ap.add_argument("--engine", choices=["v0", "v1"], required=True)
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--tokens", type=int, default=2048,
                    help="max_num_batched_tokens of the dummy batch")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--out", default="-",
                    help="JSON file to write (vLLM's logger owns stdout)")
    args = ap.parse_args()
    oracle = load_oracle()
    real = ["vllm.model_executor.layers.sampler",
            "vllm.model_executor.sampling_metadata",
            "vllm.model_executor.layers.utils",
            "vllm.triton_utils", "vllm.v1.sample"]
    # As on a CUDA machine without FlashInfer (vLLM's wheels of these
    # releases do not ship it): V1's top-k/top-p sampler is PyTorch's.
    sys.modules["flashinfer"] = None
    import torch
    import torch.library
    # Debian's torch 1.13 predates the custom-op FRAGMENT libraries and the
    # float8 dtypes that later vLLM trees name at import; the sampler uses
    # neither, so the names only need to exist.
    torch.library.Library = oracle._Inert
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                 "float8_e5m2fnuz", "uint16", "uint32", "uint64"):
        if not hasattr(torch, name):
            setattr(torch, name, torch.uint8)
    oracle.load_vllm(args.vllm_src, v1=args.engine == "v1", real=real)
    import torch
    import vllm.utils
    # No CUDA here: pinned host buffers are for copies to a GPU (and the
    # probe reads vLLM's installed-package metadata, which an extracted
    # tree has none of).
    vllm.utils.is_pin_memory_available = lambda: False
    import vllm.model_executor.sampling_metadata as sm
    sm.is_pin_memory_available = lambda: False
    dtype = getattr(torch, args.dtype)
    make = v0_sampler_call if args.engine == "v0" else v1_sampler_call
    run = make(args.rows, args.vocab, dtype, args.tokens)
    gen = torch.Generator().manual_seed(0)

    def logits():
        # The LM head's output: one row per sequence, in the model's dtype.
        return torch.randn(args.rows, args.vocab, generator=gen).to(dtype)

    run(logits(), [])  # warm-up: lazy initialisation stays out of the figure
    held, x = [], logits()
    peak, at_peak = peak_bytes(lambda: run(x, held), [x])
    cell = args.rows * args.vocab
    res = json.dumps({
        "release": args.release, "commit": args.commit,
        "engine": args.engine, "rows": args.rows, "vocab": args.vocab,
        "logits_dtype": args.dtype, "peak_bytes": peak,
        "bytes_per_row_vocab": round(peak / cell, 3),
        "live_at_peak": at_peak})
    if args.out == "-":
        print(res)
    else:
        with open(args.out, "w") as f:
            f.write(res + "\n")


if __name__ == "__main__":
    sys.exit(main())
