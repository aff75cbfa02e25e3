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
rows x vocab. With --device cuda it runs on a GPU instead and reads the
CUDA caching allocator's peaks, allocated and reserved, which also hold
what no tensor shows (cub's sort workspace). The GPU path differs only where a kernel differs (V0 and V1
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


def cuda_peak_bytes(fn, make_input):
    """On a GPU: the peak of the caching allocator's allocated bytes, and
    of its reserved bytes (what vLLM's profile sees as used device memory,
    since it reads free memory after the run), from before the input
    logits exist through fn. cub's sort workspace and every other
    temporary go through the allocator, so both count them."""
    import torch
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    alloc0, reserved0 = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    torch.cuda.reset_peak_memory_stats()
    x = make_input()
    fn(x)
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - alloc0,
            torch.cuda.max_memory_reserved() - reserved0)


def v0_sampler_call(rows, vocab, dtype, max_num_batched_tokens, device="cpu"):
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
    meta = SamplingMetadata.prepare(seqs, seq_lens, seq_lens, device, device != "cpu")
    sampler = Sampler()

    def run(logits, holder):
        holder.append(sampler(logits, meta))

    return run


def v1_sampler_run(rows, device, **params):
    """V1's sampler over rows sequences: params are SamplingMetadata
    fields that differ from no sampling parameters at all (greedy rows,
    penalties off); fields a tree's SamplingMetadata lacks are dropped."""
    import torch
    from vllm.v1.sample.metadata import SamplingMetadata
    from vllm.v1.sample.sampler import Sampler

    fields = dict(
        temperature=None, all_greedy=True, all_random=False,
        top_p=None, top_k=None, min_p=None, generators={},
        max_num_logprobs=None, no_penalties=True, prompt_token_ids=None,
        frequency_penalties=torch.zeros(rows, device=device),
        presence_penalties=torch.zeros(rows, device=device),
        repetition_penalties=torch.ones(rows, device=device),
        output_token_ids=[[] for _ in range(rows)], min_tokens={},
        logit_bias=[None for _ in range(rows)], allowed_token_ids_mask=None,
        bad_words_token_ids={})
    fields.update(params)
    known = getattr(SamplingMetadata, "__dataclass_fields__", fields)
    meta = SamplingMetadata(**{k: v for k, v in fields.items() if k in known})
    sampler = Sampler()

    def run(logits, holder):
        holder.append(sampler(logits=logits, sampling_metadata=meta))

    return run


def v1_sampler_call(rows, vocab, dtype, max_num_batched_tokens, device="cpu"):
    import torch

    def full(v):
        return torch.full((rows,), v, device=device)

    return v1_sampler_run(
        rows, device, temperature=full(0.5), all_greedy=False,
        top_p=full(0.9), top_k=full(vocab - 1),
        frequency_penalties=full(0.1), presence_penalties=full(0.1),
        repetition_penalties=full(0.1))


def hide_pydantic_1(oracle):
    """vLLM 0.6's quantization configs, imported on the sampler's path, are
    written for pydantic 2; a pydantic 1 installed here (Debian 12's) is
    hidden, so the loader stubs it as it stubs a missing one."""
    try:
        import pydantic
    except ImportError:
        return
    if hasattr(pydantic, "field_validator"):
        return
    for name in [m for m in sys.modules if m == "pydantic" or m.startswith("pydantic.")]:
        del sys.modules[name]
    sys.meta_path.insert(0, oracle._StubFinder(["pydantic"]))


def hide_incompatible_triton(oracle, src):
    """Trees of 0.5-0.6 import triton.runtime.cache.default_cache_dir,
    which later Triton releases dropped; the sampler calls no Triton kernel
    (its Triton path is commented out), so such a Triton is stubbed."""
    try:
        import triton.runtime.cache as cache
    except ImportError:
        return
    path = os.path.join(src, "vllm", "triton_utils", "custom_cache_manager.py")
    if hasattr(cache, "default_cache_dir") or not os.path.exists(path):
        return
    with open(path) as f:
        if "default_cache_dir" not in f.read():
            return
    for name in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
        del sys.modules[name]
    sys.meta_path.insert(0, oracle._StubFinder(["triton"]))


def load_sampler(vllm_src, engine, device, before_stubs=None):
    """Loads a tree's sampler path through the oracle's loader, stubbing
    what it imports but never calls; before_stubs runs first, while every
    installed module is still the real one."""
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
    if before_stubs is not None:
        before_stubs()
    hide_pydantic_1(oracle)
    hide_incompatible_triton(oracle, vllm_src)
    oracle.load_vllm(vllm_src, v1=engine == "v1", real=real)
    import vllm.utils
    pinned = device == "cuda"
    # Pinned host buffers are for copies to a GPU (and the probe reads
    # vLLM's installed-package metadata, which an extracted tree has none
    # of).
    vllm.utils.is_pin_memory_available = lambda: pinned
    import vllm.model_executor.sampling_metadata as sm
    sm.is_pin_memory_available = lambda: pinned


def tree_args(doc):
    """The argument parser both sampler scripts start from: which tree,
    release and engine."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--vllm-src", required=True)
    ap.add_argument("--release", default="")
    ap.add_argument("--commit", default="")
    ap.add_argument("--engine", choices=["v0", "v1"], required=True)
    return ap


def write_json(obj, out):
    """Writes one JSON object to out ("-": stdout; vLLM's logger owns
    stdout, so a file is the safer target)."""
    text = json.dumps(obj)
    if out == "-":
        print(text)
    else:
        with open(out, "w") as f:
            f.write(text + "\n")


def main():
    ap = tree_args(__doc__)
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--tokens", type=int, default=2048,
                    help="max_num_batched_tokens of the dummy batch")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="cuda: run on the GPU and read the caching allocator's peaks")
    ap.add_argument("--out", default="-",
                    help="JSON file to write (vLLM's logger owns stdout)")
    args = ap.parse_args()
    load_sampler(args.vllm_src, args.engine, args.device)
    import torch
    dtype = getattr(torch, args.dtype)
    make = v0_sampler_call if args.engine == "v0" else v1_sampler_call
    run = make(args.rows, args.vocab, dtype, args.tokens, args.device)
    gen = torch.Generator().manual_seed(0)

    def logits():
        # The LM head's output: one row per sequence, in the model's dtype.
        return torch.randn(args.rows, args.vocab, generator=gen).to(dtype).to(args.device)

    run(logits(), [])  # warm-up: lazy initialisation stays out of the figure
    cell = args.rows * args.vocab
    res = {"release": args.release, "commit": args.commit,
           "engine": args.engine, "rows": args.rows, "vocab": args.vocab,
           "logits_dtype": args.dtype, "device": args.device}
    if args.device == "cuda":
        held = []
        allocated, reserved = cuda_peak_bytes(lambda x: run(x, held), logits)
        res.update(gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                   peak_bytes=allocated, bytes_per_row_vocab=round(allocated / cell, 3),
                   reserved_peak_bytes=reserved,
                   reserved_bytes_per_row_vocab=round(reserved / cell, 3))
    else:
        held, x = [], logits()
        peak, at_peak = peak_bytes(lambda: run(x, held), [x])
        res.update(peak_bytes=peak, bytes_per_row_vocab=round(peak / cell, 3),
                   live_at_peak=at_peak)
    write_json(res, args.out)


if __name__ == "__main__":
    sys.exit(main())
