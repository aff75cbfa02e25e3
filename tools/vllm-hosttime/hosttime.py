#!/usr/bin/env python3
"""Times vLLM's own per-step host (CPU) work on this CPU, by release.

For n = 1 .. 1024 running sequences in steady decode, it runs vLLM's real
code from an extracted source tree (tools/vllm-oracle's loader: only what
the path imports but never calls is stubbed) and measures, per step:

V0 (0.5.x, 0.6.x), one engine process:
  schedule  Scheduler.schedule(), including the SequenceGroupMetadata it
            builds for the worker;
  output    the output path of one step: the sampler's Python results
            (SequenceOutput with the sampled token's Logprob, as V0's
            sampler always returns), the output processor (append token,
            incremental detokenization, stop checks), freeing finished
            groups, and RequestOutputFactory.create for every group.

V1 (engine core plus API-server process):
  schedule  Scheduler.schedule() (engine core);
  update    Scheduler.update_from_output(), the engine core's per-request
            outputs (EngineCoreOutput) of one step;
  frontend  the API server's OutputProcessor.process_outputs() with stats
            on (its default): detokenization, RequestOutput per request,
            the per-request output collectors.

What is not vLLM's own code, and so not measured here: the tokenizer (a
stand-in whose conversions are list look-ups and joins; Hugging Face's
fast tokenizer is Rust), the GPU model runner's input tensors, the ZMQ and
msgspec transport between V1's processes, the OpenAI server's per-chunk
response objects and SSE. doc.go takes those from published profiles.

Every figure is the minimum over the measured steps of a size and over
--passes passes through all sizes (the CPU is shared with other work; the
minimum is the uncontended cost), in microseconds. The output is JSON (see main()); tools/vllm-hosttime/regen.sh
turns it into vllm/hosttime_measured.go.

Usage: hosttime.py --vllm-src /tmp/vllm-v0.5.4 --release v0.5.4 \
           --commit SHA --out /tmp/v0.5.4.json
"""
import argparse
import gc
import importlib.util
import json
import os
import platform
import sys
import time

SIZES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
PROMPT_LEN = 128      # tokens per prompt
MEASURED_STEPS = 24   # decode steps timed per size
WARMUP_STEPS = 4
BLOCK_SIZE = 16
VOCAB = 32000
# STEP_HOOK, when set, is called after every step with whether the step was
# a pure decode; tools/vllm-gc counts the collector's work through it.
STEP_HOOK = None


def load_oracle():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "vllm-oracle", "oracle.py")
    spec = importlib.util.spec_from_file_location("vllm_oracle", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class StandInTokenizer:
    """What vLLM's detokenizer calls on a Hugging Face tokenizer, with
    conversions as list look-ups: the Python around them is vLLM's."""
    is_fast = True
    eos_token_id = 2
    all_special_ids = [0, 1, 2]
    all_special_tokens = ["<unk>", "<s>", "</s>"]

    def __init__(self):
        self.vocab = self.all_special_tokens + [
            ("\u0120" if i % 3 == 0 else "") + f"w{i}"
            for i in range(3, VOCAB)]
        self.added = {}

    def __len__(self):
        return len(self.vocab)

    def get_added_vocab(self):
        return self.added

    def convert_ids_to_tokens(self, ids, skip_special_tokens=False):
        if isinstance(ids, int):
            return self.vocab[ids]
        return [self.vocab[i] for i in ids
                if not (skip_special_tokens and i < 3)]

    def convert_tokens_to_string(self, tokens):
        return "".join(tokens).replace("\u0120", " ")

    def decode(self, ids, skip_special_tokens=False):
        return self.convert_tokens_to_string(
            self.convert_ids_to_tokens(ids, skip_special_tokens))


class TokenizerGroup:
    def __init__(self, tok):
        self.tok = tok

    def get_lora_tokenizer(self, lora_request=None):
        return self.tok

    async def get_lora_tokenizer_async(self, lora_request=None):
        return self.tok


def token_for(req, k):
    """A deterministic, non-special token ID for request req's k-th token."""
    return 3 + (req * 7919 + k * 104729) % (VOCAB - 3)


def prompt_of(req):
    return [token_for(req, -k - 1) for k in range(PROMPT_LEN)]


def time_us(fn):
    t0 = time.perf_counter_ns()
    out = fn()
    return (time.perf_counter_ns() - t0) / 1000.0, out


# ---------------------------------------------------------------- V0


def measure_v0(n):
    import vllm.core.scheduler as sched_mod
    from vllm.config import CacheConfig, SchedulerConfig
    from vllm.engine.output_processor.single_step import \
        SingleStepOutputProcessor
    from vllm.engine.output_processor.stop_checker import StopChecker
    from vllm.outputs import RequestOutputFactory
    from vllm.sampling_params import SamplingParams
    from vllm.sequence import (CompletionSequenceGroupOutput, Logprob,
                               Sequence, SequenceGroup, SequenceOutput)
    from vllm.transformers_utils.detokenizer import Detokenizer
    from vllm.utils import Counter

    steps = WARMUP_STEPS + MEASURED_STEPS + 2
    max_len = PROMPT_LEN + steps + 8
    sc = SchedulerConfig(max_num_batched_tokens=max(n * PROMPT_LEN, 4096),
                         max_num_seqs=max(n, 1), max_model_len=4096)
    cc = CacheConfig(block_size=BLOCK_SIZE, gpu_memory_utilization=1.0,
                     swap_space=0, cache_dtype="auto")
    cc.num_gpu_blocks = n * (max_len // BLOCK_SIZE + 2) + 16
    cc.num_cpu_blocks = 0
    scheduler = sched_mod.Scheduler(sc, cc, None)
    tok = StandInTokenizer()
    group = TokenizerGroup(tok)
    get_tok = group.get_lora_tokenizer
    proc = SingleStepOutputProcessor(
        sc, Detokenizer(group), [scheduler], Counter(),
        StopChecker(4096, lambda seq: tok))
    is_async_arg = "is_async" in proc.process_outputs.__code__.co_varnames
    if "seq_id_to_seq_group" in RequestOutputFactory.create.__code__.co_varnames:
        # 0.6.4+: the OpenAI server's engine (MQLLMEngine) reuses output
        # objects (use_cached_outputs).
        def create(g):
            return RequestOutputFactory.create(g, {}, use_cache=True)
    else:
        create = RequestOutputFactory.create
    params = SamplingParams(max_tokens=steps + 4)
    for r in range(n):
        seq = Sequence(r, inputs={"type": "token",
                                  "prompt_token_ids": prompt_of(r)},
                       block_size=BLOCK_SIZE, eos_token_id=tok.eos_token_id)
        scheduler.add_seq_group(SequenceGroup(
            request_id=str(r), seqs=[seq], arrival_time=time.time(),
            sampling_params=params))
    del get_tok

    def output(metas, outs):
        for sg, meta in zip(outs.scheduled_seq_groups, metas):
            g = sg.seq_group
            g.update_num_computed_tokens(sg.token_chunk_size)
            if not meta.do_sample:
                continue
            seq = g.seqs[0]
            t = token_for(int(g.request_id), seq.get_output_len())
            o = [CompletionSequenceGroupOutput(
                [SequenceOutput(seq.seq_id, t, {t: Logprob(-0.5)})], None)]
            proc.process_prompt_logprob(g, o)
            if is_async_arg:
                proc.process_outputs(g, o, False)
            else:
                proc.process_outputs(g, o)
        scheduler.free_finished_seq_groups()
        return [create(sg.seq_group) for sg in outs.scheduled_seq_groups]

    sched_us, out_us = [], []
    for i in range(steps):
        t_s, (metas, outs) = time_us(lambda: scheduler.schedule()[:2])
        if len(outs.scheduled_seq_groups) != n:
            raise RuntimeError(f"step {i}: {len(outs.scheduled_seq_groups)}"
                               f" groups scheduled, want {n}")
        decode = all(sg.token_chunk_size == 1
                     for sg in outs.scheduled_seq_groups)
        t_o, _ = time_us(lambda: output(metas, outs))
        if decode and i >= 1 + WARMUP_STEPS and len(sched_us) < MEASURED_STEPS:
            sched_us.append(t_s)
            out_us.append(t_o)
        if STEP_HOOK:
            STEP_HOOK(decode)
    return {"schedule": min(sched_us), "output": min(out_us)}


# ---------------------------------------------------------------- V1


def measure_v1(n):
    from types import SimpleNamespace

    import torch
    import vllm.v1.core.sched.scheduler as sched_mod
    from vllm.sampling_params import RequestOutputKind, SamplingParams
    from vllm.v1.engine import EngineCoreRequest
    from vllm.v1.engine.output_processor import (OutputProcessor,
                                                 RequestOutputCollector)
    from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig,
                                            KVCacheGroupSpec)
    from vllm.v1.metrics.stats import IterationStats
    from vllm.v1.outputs import ModelRunnerOutput
    from vllm.v1.request import Request

    steps = WARMUP_STEPS + MEASURED_STEPS + 2
    max_len = PROMPT_LEN + steps + 8
    blocks = n * (max_len // BLOCK_SIZE + 2) + 16
    budget = max(n * PROMPT_LEN, 8192)
    scheduler_config = SimpleNamespace(
        max_num_seqs=max(n, 1), max_num_batched_tokens=budget,
        max_model_len=4096, long_prefill_token_threshold=0,
        disable_chunked_mm_input=False, chunked_prefill_enabled=True,
        max_num_encoder_input_tokens=budget, encoder_cache_size=budget)
    cache_config = SimpleNamespace(
        block_size=BLOCK_SIZE, num_gpu_blocks=blocks,
        enable_prefix_caching=True, prefix_caching_hash_algo="builtin")
    model_config = SimpleNamespace(is_multimodal_model=False,
                                   is_encoder_decoder=False,
                                   max_model_len=4096)
    vllm_config = SimpleNamespace(
        scheduler_config=scheduler_config, cache_config=cache_config,
        model_config=model_config, lora_config=None, kv_events_config=None,
        kv_transfer_config=None, speculative_config=None)
    kv_cache_config = KVCacheConfig(
        num_blocks=blocks, tensors={},
        kv_cache_groups=[KVCacheGroupSpec(["layer"], FullAttentionSpec(
            BLOCK_SIZE, 1, 1, torch.float32, False))])
    scheduler = sched_mod.Scheduler(
        vllm_config=vllm_config, kv_cache_config=kv_cache_config,
        log_stats=True, structured_output_manager=SimpleNamespace(
            grammar_bitmask=lambda *a, **k: None))
    tok = StandInTokenizer()
    front = OutputProcessor(TokenizerGroup(tok), log_stats=True)
    collectors = []
    for r in range(n):
        params = SamplingParams(max_tokens=steps + 4,
                                output_kind=RequestOutputKind.DELTA)
        core_req = EngineCoreRequest(
            request_id=str(r), prompt_token_ids=prompt_of(r), mm_inputs=None,
            mm_hashes=None, mm_placeholders=None, sampling_params=params,
            eos_token_id=tok.eos_token_id, arrival_time=time.time(),
            lora_request=None, cache_salt=None)
        q = RequestOutputCollector(output_kind=RequestOutputKind.DELTA)
        collectors.append(q)
        front.add_request(core_req, None, None, 0, q)
        scheduler.add_request(Request.from_engine_core_request(core_req))

    def model_output(out):
        ids = list(out.num_scheduled_tokens)
        sampled = []
        for rid in ids:
            req = scheduler.requests[rid]
            sampled.append([token_for(int(rid), req.num_output_tokens)])
        return ModelRunnerOutput(
            req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)},
            sampled_token_ids=sampled, spec_token_ids=None, logprobs=None,
            prompt_logprobs_dict={})

    sched_us, upd_us, front_us = [], [], []
    for i in range(steps):
        t_s, out = time_us(scheduler.schedule)
        if len(out.num_scheduled_tokens) != n:
            raise RuntimeError(f"step {i}: {len(out.num_scheduled_tokens)}"
                               f" requests scheduled, want {n}")
        decode = all(t == 1 for t in out.num_scheduled_tokens.values())
        mro = model_output(out)
        t_u, core_out = time_us(
            lambda: scheduler.update_from_output(out, mro))
        outputs = core_out.outputs
        t_f, _ = time_us(lambda: front.process_outputs(
            outputs, core_out.timestamp, IterationStats()))
        for q in collectors:
            q.get_nowait()
        if decode and i >= 1 + WARMUP_STEPS and len(sched_us) < MEASURED_STEPS:
            sched_us.append(t_s)
            upd_us.append(t_u)
            front_us.append(t_f)
        if STEP_HOOK:
            STEP_HOOK(decode)
    return {"schedule": min(sched_us), "update": min(upd_us),
            "frontend": min(front_us)}


# ---------------------------------------------------------------- main


def cpu_model():
    """The model name with its family and model numbers (a VM may show
    only a generic name such as "AMD EPYC")."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                info.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.processor() or "unknown"
    return (f"{info.get('model name', 'unknown')} (family "
            f"{info.get('cpu family', '?')}, model {info.get('model', '?')})")


def load_tree(vllm_src, engine):
    """Imports the extracted tree's host path for engine ("v0" or "v1")
    and returns the function that measures it at n running sequences."""
    oracle = load_oracle()
    if engine == "v0":
        real = ["vllm.engine.output_processor", "vllm.outputs",
                "vllm.transformers_utils.detokenizer"]
    else:
        real = ["vllm.v1.engine", "vllm.v1.metrics", "vllm.outputs",
                "vllm.transformers_utils.detokenizer",
                "vllm.transformers_utils.detokenizer_utils",
                "vllm.engine.output_processor.stop_checker"]
    import torch.library
    # Later trees register custom ops in a torch "FRAGMENT" library at
    # import, which Debian's torch 1.13 predates; none is called here.
    torch.library.Library = oracle._Inert
    oracle.load_vllm(vllm_src, v1=engine == "v1", real=real)
    return measure_v0 if engine == "v0" else measure_v1


def tree_args(ap, sizes):
    """The flags that name a tree and its run: source, release, commit,
    engine, output file and the running-sequence sizes."""
    ap.add_argument("--vllm-src", required=True)
    ap.add_argument("--release", required=True)
    ap.add_argument("--commit", default="")
    ap.add_argument("--engine", choices=["v0", "v1"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default=",".join(map(str, sizes)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    tree_args(ap, SIZES)
    ap.add_argument("--passes", type=int, default=5,
                    help="measure every size this many times, keep the least")
    args = ap.parse_args()
    measure = load_tree(args.vllm_src, args.engine)
    sizes = [int(s) for s in args.sizes.split(",")]
    best = {n: {} for n in sizes}
    gc.disable()  # vLLM's own servers run with gc on; collections are noise
    for p in range(args.passes):
        for n in sizes:
            for k, v in measure(n).items():
                best[n][k] = min(v, best[n].get(k, v))
            gc.collect()
            print(p, n, json.dumps(best[n]), file=sys.stderr)
    rows = [{"seqs": n, **{k: round(v, 1) for k, v in best[n].items()}}
            for n in sizes]
    res = {"release": args.release, "commit": args.commit,
           "engine": args.engine, "cpu": cpu_model(),
           "python": platform.python_version(),
           "prompt_len": PROMPT_LEN, "measured_steps": MEASURED_STEPS,
           "passes": args.passes,
           "statistic": "min", "unit": "us", "rows": rows}
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
