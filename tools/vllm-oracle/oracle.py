#!/usr/bin/env python3
"""Differential oracle: run vLLM's own scheduler and block manager on CPU.

Reads scenario specs (engine/testdata/oracle/scenarios/*.json), drives the
real vLLM scheduler from a checked-out vLLM source tree step by step, and
writes one per-step trace per scenario (engine/testdata/oracle/<release>/).
engine/oracle_test.go replays the same scenarios through the Go engine and
requires identical traces.

Only the scheduler, block manager, sequence and config modules are imported
from vLLM; everything they import but do not use on this path (model
registry, quantization, transformers, CUDA ops, platforms...) is replaced by
inert stub modules, so no GPU, model or tokenizer is needed.

The driver both sides share (virtual time, no wall clock):
  * now starts at 0 and advances by step_seconds after every step that
    scheduled at least one token (the model "runs" it);
  * before each schedule() call every request whose arrival <= now is added,
    in file order;
  * a schedule() call that scheduled nothing but preempted, swapped out or
    ignored something is followed at once by another at the same now;
  * a schedule() call that did nothing jumps now to the next arrival;
  * after a step runs, every scheduled request advances its computed tokens
    and, once its prefill is complete, samples one token (ignore_eos: a
    request generates exactly output_len tokens).

Usage: oracle.py --vllm-src /tmp/vllm-v0.5.4 --release v0.5.4 \
           --scenarios DIR --out DIR [--only NAME]
"""
import argparse
import gzip
import importlib.abc
import importlib.machinery
import json
import os
import sys
import types

# ---------------------------------------------------------------- stubbing


class _InertMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (_Inert,), {})


class _Inert(metaclass=_InertMeta):
    """Stands in for any class or function a stubbed module exports."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Inert()

    def __getattr__(self, name):
        return _Inert()

    def __class_getitem__(cls, item):
        return cls


def _stub_module(name):
    mod = types.ModuleType(name)
    mod.__path__ = []  # a package, so stubbed submodules resolve too

    def __getattr__(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        value = type(attr, (_Inert,), {})
        setattr(mod, attr, value)
        return value

    mod.__getattr__ = __getattr__
    return mod


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves inert modules for the given prefixes (never for real code)."""

    def __init__(self, prefixes):
        self.prefixes = tuple(prefixes)

    def find_spec(self, fullname, path, target=None):
        if any(fullname == p or fullname.startswith(p + ".")
               for p in self.prefixes):
            return importlib.machinery.ModuleSpec(fullname, self,
                                                  is_package=True)
        return None

    def create_module(self, spec):
        return _stub_module(spec.name)

    def exec_module(self, module):
        pass


class _MissingThirdPartyFinder(_StubFinder):
    """Last on sys.meta_path: a third-party module that is not installed
    becomes an inert stub (vLLM's utils import many that the scheduler never
    calls). vllm's own modules are never stubbed this way: a missing one is
    an error."""

    def __init__(self):
        super().__init__(())
        self.stubbed = set()

    def find_spec(self, fullname, path, target=None):
        top = fullname.split(".")[0]
        if (top in ("vllm", "torch") or top.startswith("_")
                or top in sys.stdlib_module_names):
            return None  # platform probes (try: import _winapi) stay real
        self.stubbed.add(fullname.split(".")[0])
        return importlib.machinery.ModuleSpec(fullname, self,
                                              is_package=True)


def _package(name, path):
    """Registers a package without running its __init__ (vllm/__init__.py
    imports the whole engine)."""
    mod = types.ModuleType(name)
    mod.__path__ = [path]
    sys.modules[name] = mod
    return mod


def _optional_stub(name, **attrs):
    """Gives a third-party module stubbed for not being installed the few
    working attributes vLLM's scheduler path needs from it."""
    mod = importlib.import_module(name)
    if isinstance(getattr(mod.__spec__, "loader", None), _StubFinder):
        for k, v in attrs.items():
            setattr(mod, k, v)


_MISSING = object()


class _MsgspecField:
    def __init__(self, default=_MISSING, default_factory=None, name=None):
        self.default, self.default_factory = default, default_factory


class _MsgspecStruct:
    """The part of msgspec.Struct vLLM's data classes use: an __init__
    taking the annotated fields positionally or by name, with defaults and
    default factories, then __post_init__. Serialisation is never used."""

    def __init_subclass__(cls, **options):
        super().__init_subclass__()
        fields = {}
        for klass in reversed(cls.__mro__):
            for name, ann in klass.__dict__.get("__annotations__", {}).items():
                if "ClassVar" in str(ann):
                    continue
                value = klass.__dict__.get(name, _MISSING)
                if isinstance(value, _MsgspecField):
                    fields[name] = value
                elif value is not _MISSING or name not in fields:
                    fields[name] = _MsgspecField(default=value)
        for name, f in fields.items():
            if isinstance(cls.__dict__.get(name), _MsgspecField):
                delattr(cls, name)
        cls.__struct_fields__ = tuple(fields)
        cls.__struct_defaults__ = fields

    def __init__(self, *args, **kwargs):
        names = self.__struct_fields__
        for name, value in zip(names, args):
            kwargs[name] = value
        for name in names:
            if name in kwargs:
                value = kwargs[name]
            else:
                f = self.__struct_defaults__[name]
                if f.default_factory is not None:
                    value = f.default_factory()
                elif f.default is not _MISSING:
                    value = f.default
                else:
                    raise TypeError(f"missing required argument {name!r}")
            object.__setattr__(self, name, value)
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()


def load_vllm(src, v1=False, real=()):
    """Makes vllm importable from src with only the scheduler path real;
    real names stubbed packages (or their subpackages) that a caller needs
    to run for real (tools/vllm-hosttime: the output path and sampler)."""
    src = os.path.abspath(src)
    sys.path.insert(0, src)
    root = os.path.join(src, "vllm")
    _package("vllm", root)
    stubs = ["transformers", "vllm.model_executor", "vllm.tracing",
             "vllm.transformers_utils", "vllm._custom_ops", "vllm._C",
             "vllm.platforms", "vllm.spec_decode", "vllm.distributed",
             "vllm.executor", "vllm.worker", "vllm.attention",
             "vllm.multimodal", "vllm.inputs.registry", "vllm.engine",
             "vllm.entrypoints", "vllm.compilation", "vllm.usage",
             "vllm.plugins", "vllm.triton_utils", "vllm.lora.layers",
             "vllm.lora.models", "vllm.lora.punica", "vllm.lora.utils",
             "vllm.lora.peft_helper", "vllm.lora.resolver",
             "vllm.v1.engine", "vllm.v1.worker", "vllm.v1.executor",
             "vllm.v1.attention", "vllm.v1.spec_decode", "vllm.v1.metrics",
             "vllm.v1.structured_output", "vllm.v1.sample",
             "vllm.distributed.kv_transfer", "vllm.model_executor.layers",
             "vllm.forward_context", "vllm.reasoning", "vllm.outputs",
             "vllm.logits_process", "vllm.multimodal.inputs",
             "vllm.transformers_utils.tokenizer", "vllm.beam_search",
             "vllm.v1.kv_cache_interface_stub"]
    if v1:
        # V1's config module (pydantic models, platform probing) is not
        # needed: the V1 scheduler reads plain fields from its configs, so
        # run_v1 passes namespaces holding exactly those.
        stubs.append("vllm.config")
    for r in real:
        # A stubbed package above a real one becomes a plain package whose
        # __init__ does not run (vllm/engine/__init__.py imports the engine).
        parts = r.split(".")
        for i in range(2, len(parts)):
            parent = ".".join(parts[:i])
            if parent in stubs and parent not in sys.modules:
                _package(parent, os.path.join(src, *parts[:i]))
    stubs = [s for s in stubs if not any(
        s == r or s.startswith(r + ".") or r.startswith(s + ".")
        for r in real)]
    finder = _StubFinder(stubs)
    sys.meta_path.insert(0, finder)
    sys.meta_path.append(_MissingThirdPartyFinder())
    _optional_stub("pydantic", Field=lambda *a, **k: None)
    _optional_stub("msgspec", Struct=_MsgspecStruct, field=_MsgspecField,
                   Meta=lambda *a, **k: None)
    import typing_extensions  # Debian's predates TypeIs (same use as TypeGuard)
    if not hasattr(typing_extensions, "TypeIs"):
        typing_extensions.TypeIs = typing_extensions.TypeGuard
    if not hasattr(typing_extensions, "deprecated"):
        typing_extensions.deprecated = lambda *a, **k: (lambda f: f)
    if v1:
        # vllm.utils registers custom GPU ops in a torch "FRAGMENT" library
        # at import; Debian's torch predates that kind, and no op is used.
        import torch.library
        torch.library.Library = _Inert
    # Values the config modules read at import time.
    q = importlib.import_module("vllm.model_executor.layers.quantization")
    q.QUANTIZATION_METHODS = []
    tr = importlib.import_module("vllm.tracing")
    tr.is_otel_installed = lambda: False
    tr.is_otel_available = lambda: False
    tr.otel_import_error_traceback = None


# ---------------------------------------------------------------- scenarios

PREFIX_BASE = 1_000_000_000  # prefix tokens: group g -> PREFIX_BASE + g*100_000 + i
OUTPUT_BASE = 2_000_000_000  # generated tokens never collide with prompts


def prompt_tokens(req):
    """Token IDs of a request's prompt: explicit, or a shared prefix of
    group prefix_group (prefix_len tokens) followed by tokens unique to the
    request."""
    if "prompt" in req:
        return list(req["prompt"])
    n = req["prompt_len"]
    shared = min(req.get("prefix_len", 0), n)
    group = req.get("prefix_group", 0)
    toks = [PREFIX_BASE + group * 100_000 + i for i in range(shared)]
    toks += [req["id"] * 100_000 + i for i in range(n - shared)]
    return toks


def output_token(req_id, k):
    return OUTPUT_BASE + req_id * 10_000 + k


def compact_scheduled(pairs):
    """[[id, tokens], ...] sorted by id -> "1-10:1 15:1 22:22": runs of
    consecutive IDs with the same token count collapse into a range."""
    parts, i = [], 0
    while i < len(pairs):
        j = i
        while (j + 1 < len(pairs) and pairs[j + 1][0] == pairs[j][0] + 1
               and pairs[j + 1][1] == pairs[i][1]):
            j += 1
        a, t = pairs[i]
        b = pairs[j][0]
        parts.append(f"{a}:{t}" if a == b else f"{a}-{b}:{t}")
        i = j + 1
    return " ".join(parts)


# ---------------------------------------------------------------- drivers

def drive(sc, trace_every, clock, has_work, add, schedule, run):
    """The driver both engines share (see the module doc). add(request)
    queues a request; schedule() makes one schedule() call and returns its
    trace fields (without "i" and "now") and whether it preempted, swapped
    out or ignored anything; run() applies the model's step."""
    reqs = sorted(enumerate(sc["requests"]),
                  key=lambda x: (x[1].get("arrival", 0), x[0]))
    reqs = [r for _, r in reqs]
    stats = {"preemptions": 0, "swap_outs": 0, "swap_ins": 0, "ignored": 0}
    trace, steps, runs, nxt, died = [], 0, 0, 0, None
    dt = sc.get("step_seconds", 1)
    max_calls = sc.get("max_steps", 200_000)
    while True:
        while nxt < len(reqs) and reqs[nxt].get("arrival", 0) <= clock.now:
            add(reqs[nxt])
            nxt += 1
        if not has_work() and nxt >= len(reqs):
            break
        if steps >= max_calls:
            raise RuntimeError(f"{sc['name']}: no end after {steps} steps")
        fields, changed = schedule()
        rec = {"i": steps, "now": clock.now, **fields}
        steps += 1
        if "died" in rec:
            died = rec["died"]
            trace.append(rec)
            break
        preempted = rec.get("preempted", [])
        stats["preemptions"] += len(preempted)
        stats["swap_outs"] += sum(1 for p in preempted if p.endswith(":swap"))
        stats["swap_ins"] += len(rec.get("swapped_in", []))
        stats["ignored"] += len(rec.get("ignored", []))
        if trace_every <= 1 or rec["i"] % trace_every == 0:
            trace.append(rec)
        if not rec["scheduled"]:
            if changed:
                continue
            if nxt < len(reqs):
                clock.now = float(reqs[nxt].get("arrival", 0))
                continue
            # vLLM would wait forever (a livelock): record where.
            rec["stuck"] = "requests remain but none can be scheduled"
            if trace[-1] is not rec:
                trace.append(rec)
            break
        runs += 1
        clock.now += dt
        run()
    stats["steps"] = steps
    stats["model_steps"] = runs
    return {"steps": stats, "trace_every": trace_every, "trace": trace,
            "died": died}




class FakeClock:
    now = 0.0

    def time(self):
        return self.now

    def monotonic(self):
        return self.now

    def perf_counter(self):
        return self.now


def run_v0(sc, trace_every):
    import vllm.core.scheduler as sched_mod
    from vllm.config import CacheConfig, SchedulerConfig
    from vllm.sampling_params import SamplingParams
    from vllm.sequence import Logprob, Sequence, SequenceGroup, SequenceStatus

    clock = FakeClock()
    real_time = sched_mod.time
    sched_mod.time = clock  # _passed_delay and the evictor's access times

    preempt_mode = sc.get("preemption_mode") or None
    scheduler_config = SchedulerConfig(
        sc["max_num_batched_tokens"], sc["max_num_seqs"],
        sc["max_model_len"],
        delay_factor=sc.get("delay_factor", 0.0),
        enable_chunked_prefill=sc.get("chunked_prefill", False),
        preemption_mode=preempt_mode)
    cache_config = CacheConfig(sc["block_size"], 1.0, 0, "auto",
                               enable_prefix_caching=sc.get(
                                   "prefix_caching", False))
    cache_config.num_gpu_blocks = sc["num_gpu_blocks"]
    cache_config.num_cpu_blocks = sc.get("num_cpu_blocks", 0)
    scheduler = sched_mod.Scheduler(scheduler_config, cache_config, None)

    events = {"preempted": [], "swapped_in": []}
    orig_preempt = scheduler._preempt
    orig_swap_in = scheduler._swap_in

    def preempt(seq_group, blocks_to_swap_out, preemption_mode=None):
        mode = orig_preempt(seq_group, blocks_to_swap_out, preemption_mode)
        name = "swap" if mode == sched_mod.PreemptionMode.SWAP else "recompute"
        events["preempted"].append(f"{int(seq_group.request_id)}:{name}")
        return mode

    def swap_in(seq_group, blocks_to_swap_in):
        events["swapped_in"].append(int(seq_group.request_id))
        return orig_swap_in(seq_group, blocks_to_swap_in)

    scheduler._preempt = preempt
    scheduler._swap_in = swap_in

    def add(r):
        seq = Sequence(r["id"], inputs={"prompt_token_ids": prompt_tokens(r)},
                       block_size=sc["block_size"])
        group = SequenceGroup(request_id=str(r["id"]), seqs=[seq],
                              arrival_time=float(r.get("arrival", 0)),
                              sampling_params=SamplingParams(
                                  max_tokens=r["output_len"],
                                  ignore_eos=True))
        max_tokens[r["id"]] = r["output_len"]
        scheduler.add_seq_group(group)

    def schedule():
        events["preempted"].clear()
        events["swapped_in"].clear()
        try:
            out = scheduler.schedule()[1]
        except RuntimeError as err:  # vLLM's engine dies (no swap space)
            return {"died": str(err)}, True
        last[0] = out
        rec = {"scheduled": compact_scheduled(sorted(
            [int(g.seq_group.request_id), g.token_chunk_size]
            for g in out.scheduled_seq_groups))}
        ignored = sorted(int(g.request_id) for g in out.ignored_seq_groups)
        if events["preempted"]:
            rec["preempted"] = list(events["preempted"])
        if events["swapped_in"]:
            rec["swapped_in"] = sorted(events["swapped_in"])
        if ignored:
            rec["ignored"] = ignored
        rec["free_gpu"] = scheduler.block_manager.get_num_free_gpu_blocks()
        rec["free_cpu"] = scheduler.block_manager.get_num_free_cpu_blocks()
        return rec, bool(events["preempted"] or ignored)

    def run():
        for sg in last[0].scheduled_seq_groups:
            group = sg.seq_group
            group.update_num_computed_tokens(sg.token_chunk_size)
            seq = group.get_seqs()[0]
            if seq.data.get_num_uncomputed_tokens() > 0:
                continue  # partial prefill chunk: no sample
            rid = int(group.request_id)
            tok = output_token(rid, seq.get_output_len())
            seq.append_token_id(tok, {tok: Logprob(0.0)})
            if seq.get_output_len() >= max_tokens[rid]:
                seq.status = SequenceStatus.FINISHED_LENGTH_CAPPED
                scheduler.free_seq(seq)
        scheduler.free_finished_seq_groups()

    max_tokens, last = {}, [None]
    try:
        return drive(sc, trace_every, clock, scheduler.has_unfinished_seqs,
                     add, schedule, run)
    finally:
        sched_mod.time = real_time



# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vllm-src", required=True)
    ap.add_argument("--release", required=True)
    ap.add_argument("--commit", default="")
    ap.add_argument("--scenarios", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    is_v1 = release_engine(args.release, {}) == "v1"
    load_vllm(args.vllm_src, v1=is_v1)
    os.makedirs(args.out, exist_ok=True)
    names = sorted(f for f in os.listdir(args.scenarios)
                   if f.endswith(".json"))
    for fname in names:
        with open(os.path.join(args.scenarios, fname)) as f:
            sc = json.load(f)
        if args.only and sc["name"] != args.only:
            continue
        if sc["engine"] != release_engine(args.release, sc):
            continue
        res = run_v0(sc, sc.get("trace_every", 1)) if sc["engine"] == "v0" \
            else run_v1(sc, sc.get("trace_every", 1))
        res = {"scenario": sc["name"], "release": args.release,
               "commit": args.commit, **res}
        write_trace(os.path.join(args.out, fname + ".gz"), res)
        print(f"{sc['name']}: {res['steps']}", file=sys.stderr)


def write_trace(path, res):
    """Gzipped JSON, byte-for-byte reproducible (no name, mtime 0)."""
    data = (json.dumps(res, separators=(",", ":")) + "\n").encode()
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
            f.write(data)


def release_engine(release, sc):
    """V0 releases run V0 scenarios; V1-capable releases run V1 ones."""
    return "v0" if release.startswith("v0.5") or release.startswith(
        "v0.6") else "v1"


def run_v1(sc, trace_every):
    """Drives vllm/v1/core/sched/scheduler.py. The model runner is faked:
    every scheduled request whose prefill is complete samples one token
    (partial prefill chunks sample nothing, as the GPU runner discards
    them), and update_from_output (vLLM's own) applies it."""
    from types import SimpleNamespace

    import torch
    import vllm.v1.core.sched.scheduler as sched_mod
    from vllm.sampling_params import SamplingParams
    from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig,
                                            KVCacheGroupSpec)
    from vllm.v1.outputs import ModelRunnerOutput
    from vllm.v1.request import Request

    clock = FakeClock()
    sched_mod.time = clock
    bs = sc["block_size"]
    # Exactly the fields the scheduler and KV cache manager read.
    scheduler_config = SimpleNamespace(
        max_num_seqs=sc["max_num_seqs"],
        max_num_batched_tokens=sc["max_num_batched_tokens"],
        max_model_len=sc["max_model_len"], long_prefill_token_threshold=0,
        disable_chunked_mm_input=False, chunked_prefill_enabled=True,
        max_num_encoder_input_tokens=sc["max_num_batched_tokens"],
        encoder_cache_size=sc["max_num_batched_tokens"])
    cache_config = SimpleNamespace(
        block_size=bs, num_gpu_blocks=sc["num_gpu_blocks"],
        enable_prefix_caching=sc.get("prefix_caching", False),
        prefix_caching_hash_algo="builtin")
    model_config = SimpleNamespace(is_multimodal_model=False,
                                   is_encoder_decoder=False,
                                   max_model_len=sc["max_model_len"])
    vllm_config = SimpleNamespace(
        scheduler_config=scheduler_config, cache_config=cache_config,
        model_config=model_config, lora_config=None, kv_events_config=None,
        kv_transfer_config=None, speculative_config=None)
    kv_cache_config = KVCacheConfig(
        num_blocks=sc["num_gpu_blocks"], tensors={},
        kv_cache_groups=[KVCacheGroupSpec(["layer"], FullAttentionSpec(
            bs, 1, 1, torch.float32, False))])
    scheduler = sched_mod.Scheduler(
        vllm_config=vllm_config, kv_cache_config=kv_cache_config,
        log_stats=False, structured_output_manager=SimpleNamespace(
            grammar_bitmask=lambda *a, **k: None))
    kvm = scheduler.kv_cache_manager

    in_schedule = [False]
    preempted = []
    orig_free = kvm.free

    def free(request):
        if in_schedule[0]:  # inside schedule() only preemption frees
            preempted.append(f"{int(request.request_id)}:recompute")
        return orig_free(request)

    kvm.free = free

    def add(r):
        scheduler.add_request(Request(
            request_id=str(r["id"]), prompt_token_ids=prompt_tokens(r),
            multi_modal_inputs=None, multi_modal_hashes=None,
            multi_modal_placeholders=None,
            sampling_params=SamplingParams(max_tokens=r["output_len"],
                                           ignore_eos=True),
            eos_token_id=None, arrival_time=float(r.get("arrival", 0))))

    def schedule():
        preempted.clear()
        in_schedule[0] = True
        out = scheduler.schedule()
        in_schedule[0] = False
        last[0] = out
        rec = {"scheduled": compact_scheduled(sorted(
            [int(k), v] for k, v in out.num_scheduled_tokens.items()))}
        if preempted:
            rec["preempted"] = list(preempted)
        hits = sorted((int(n.req_id), n.num_computed_tokens)
                      for n in out.scheduled_new_reqs
                      if n.num_computed_tokens > 0)
        if hits:
            rec["hits"] = [f"{a}:{b}" for a, b in hits]
        rec["free_gpu"] = kvm.block_pool.get_num_free_blocks()
        rec["free_cpu"] = 0
        return rec, bool(preempted)

    def run():
        out = last[0]
        req_ids = sorted(out.num_scheduled_tokens, key=int)
        sampled = []
        for rid in req_ids:
            req = scheduler.requests[rid]
            if req.num_computed_tokens < req.num_tokens:
                sampled.append([])  # partial prefill: the runner discards it
            else:
                sampled.append([output_token(int(rid), req.num_output_tokens)])
        scheduler.update_from_output(out, ModelRunnerOutput(
            req_ids=req_ids,
            req_id_to_index={r: i for i, r in enumerate(req_ids)},
            sampled_token_ids=sampled, spec_token_ids=None, logprobs=None,
            prompt_logprobs_dict={}))

    last = [None]
    return drive(sc, trace_every, clock, scheduler.has_unfinished_requests,
                 add, schedule, run)


if __name__ == "__main__":
    main()
