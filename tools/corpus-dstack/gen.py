#!/usr/bin/env python3
"""Writes validate/corpus/dstack-h100-llama405b-fp8.yaml from dstack's
benchmarks repository (github.com/dstackai/benchmarks): every 8xH100 SXM5 run
of its Llama-3.1-405B-FP8 comparison with 8xMI300X (serving, throughput and
latency benchmarks), with the figures of the run's result JSON.

Usage: gen.py BENCHMARKS_GIT_DIR CORPUS_DIR

BENCHMARKS_GIT_DIR is a clone (or a bare mirror) of dstackai/benchmarks;
CORPUS_DIR is validate/corpus. It writes CORPUS_DIR/dstack-h100-llama405b-fp8.yaml
and, for each serving run, the run's per-request input_lens and output_lens
under CORPUS_DIR/lengths/dstack-h100-llama405b-fp8/. Only figures and setups
are read (the raw_data JSON files and the README's commands); no code.
Standard library only.
"""
import json
import os
import re
import subprocess
import sys

SOURCE = "dstack-h100-llama405b-fp8"

DIR = "comparison/h100sxm5_vs_mi300x/raw_data"
SERVER_ARGS = '["--tensor-parallel-size", "8", "--max-model-len", "91680"]'
MODEL = "meta-llama/Llama-3.1-405B-FP8"


def git(root, *args):
    return subprocess.run(["git", "--git-dir", root, *args], capture_output=True, text=True, check=True).stdout


def files(root, sub):
    return sorted(git(root, "ls-tree", "--name-only", "HEAD", f"{DIR}/{sub}/").split())


def load(root, path):
    return json.loads(git(root, "show", f"HEAD:{path}"))


def fmt(v):
    if isinstance(v, float):
        return f"{v:.6g}" if abs(v) < 1e6 else f"{v:.0f}"
    return str(v)


def run_header(rid, regime, benchmark):
    return [
        f"  - id: {rid}",
        "    split: holdout",
        f"    regime: {regime}",
        f"    benchmark: {benchmark}",
        "    gpu: H100-SXM",
        "    gpu_count: 8",
        "    tensor_parallel: 8",
        "    pipeline_parallel: 1",
        f"    model: {MODEL}",
        "    quantization: fp8",
        "    dtype: auto",
        "    kv_cache_dtype: auto",
        "    vllm_version: 0.6.3.post2.dev308",
        "    sim_vllm_version: 0.6.4",
        "    engine: v0",
        f"    server_args: {SERVER_ARGS}",
    ]


def workload(dataset, inp, out, prompts, rate, batch=0, ignore_eos=True, lengths=""):
    extra = [f"      lengths: {lengths}"] if lengths else []
    return [
        "    workload:",
        f"      dataset: {dataset}",
        f"      input_len: {fmt(inp)}",
        f"      output_len: {fmt(out)}",
        "      range_ratio: 0",
        "      prefix_len: 0",
        f"      num_prompts: {prompts}",
        f"      request_rate: {rate}",
        "      max_concurrency: 0",
        "      burstiness: 1",
        f"      batch_size: {batch}",
        f"      ignore_eos: {'true' if ignore_eos else 'false'}",
    ] + extra


def published(pairs):
    return ["    published:"] + [f"      {k}: {fmt(v)}" for k, v in pairs]


def uncertain(lines):
    return ["    uncertain:"] + ['      - "' + u.replace('"', '\\"') + '"' for u in lines]


VERSION = ("vLLM 0.6.3.post2.dev308+gb489fc3c: a nightly wheel between 0.6.3.post1 and 0.6.4 "
           "(pip-installed on 2024-11-09), simulated as 0.6.4, the first release on the PyTorch 2.5.1 "
           "and NCCL 2.21.5 its environment lists (0.6.3 shipped PyTorch 2.4.0)")
CHUNKED = ("chunked prefill is not known: the benchmark scripts of 0.6.3 had their own "
           "--enable-chunked-prefill, off unless passed, so the memory profile would run 91,680 tokens "
           "at once and leave less KV cache; from vLLM PR #9529 (October 2024) they take EngineArgs' "
           "flags, which turn it on above 32K tokens of context, as sim assumes")


def write_lengths(corpus, rid, d):
    rel = f"lengths/{SOURCE}/{rid}.json"
    os.makedirs(os.path.join(corpus, os.path.dirname(rel)), exist_ok=True)
    with open(os.path.join(corpus, rel), "w") as f:
        # ttfts to the microsecond: vLLM's client left 0.0 for a reply that
        # carried no text, which the replay reports the same way.
        ttfts = [round(t, 6) for t in d["ttfts"]]
        json.dump({"input_lens": d["input_lens"], "output_lens": d["output_lens"], "ttfts": ttfts}, f,
                  separators=(",", ":"))
        f.write("\n")
    return rel


def serving(root, corpus):
    out = []
    for path in files(root, "8xH100SXM5-serving"):
        d = load(root, path)
        rate = int(d["request_rate"])
        n = d["num_prompts"]
        lengths = write_lengths(corpus, f"sharegpt-qps{rate}", d)
        keys = ["completed", "duration", "total_input_tokens", "total_output_tokens", "request_throughput",
                "output_throughput", "total_token_throughput"]
        for m in ("ttft", "tpot", "itl"):
            keys += [f"mean_{m}_ms", f"median_{m}_ms", f"p99_{m}_ms"]
        out.append("")
        out += run_header(f"sharegpt-qps{rate}", "serving-saturated", "serving")
        out += workload("sharegpt", round(d["total_input_tokens"] / n), round(d["total_output_tokens"] / n), n, rate,
                        ignore_eos=False, lengths=lengths)
        out += published([(k, d[k]) for k in keys])
        out += uncertain([
            VERSION,
            f"ShareGPT replayed with the run's own per-request input_lens and output_lens ({lengths}); "
            f"input_len and output_len are their means, {d['total_input_tokens']} / {n} and "
            f"{d['total_output_tokens']} / {n} (no --ignore-eos: replies end at EOS or at the reference "
            "reply's length, and a reply the client counted as 0 tokens is simulated as 1)",
            f"{sum(1 for t, o in zip(d['ttfts'], d['output_lens']) if t == 0 and o == 0)} of the {n} replies "
            "carried no text: vLLM's client of the time (benchmark_serving.py, November 2024) left their TTFT at "
            "0.0 and counted 0 tokens, and those zeros are in its TTFT mean, median and p99; the replay reports "
            "them the same way (the lengths file keeps the run's ttfts)",
            f"the server kept up with less than the offered {rate} req/s "
            f"({d['request_throughput']:.2f} req/s completed), so the run is saturated",
        ])
    return out


def throughput(root):
    out = []
    pat = re.compile(r"nvidia-(throughput|latency)_test_ip(\d+)_op(\d+)_np(\d+)\.json$")
    runs = []
    for path in files(root, "8xH100SXM5-throughput"):
        m = pat.search(path)
        kind, inp, outl, n = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
        runs.append((kind, inp, outl, n, path))
    for kind, inp, outl, n, path in sorted(runs, key=lambda r: (r[0] != "throughput", r[1], r[3])):
        d = load(root, path)
        regime = "offline-decode" if inp <= 128 else "offline-mixed"
        out.append("")
        if kind == "throughput":
            out += run_header(f"throughput-in{inp}-out{outl}-n{n}", regime, "throughput")
            out += workload("random", inp, outl, n, "inf")
            total = d["total_num_tokens"]
            out += published([
                ("duration", d["elapsed_time"]),
                ("request_throughput", d["requests_per_second"]),
                ("total_token_throughput", d["tokens_per_second"]),
            ])
            out += uncertain([
                VERSION,
                f"benchmark_throughput.py with --input-len {inp} --output-len {outl} --num-prompts {n}: "
                f"synthetic prompts of exactly {inp} tokens, outputs of exactly {outl} (the benchmark sets "
                f"ignore_eos); total_num_tokens {total} = {n} x {inp + outl}",
                CHUNKED,
            ])
        else:
            out += run_header(f"latency-in{inp}-out{outl}-bs{n}", regime, "latency")
            out += workload("random", inp, outl, n, "inf", batch=n)
            out += published([("mean_e2el_ms", d["avg_latency"] * 1000)])
            out += uncertain([
                VERSION,
                f"the latency command is not printed: benchmark_latency.py with --input-len {inp} "
                f"--output-len {outl} --batch-size {n} is inferred from the file name "
                f"(latency_test_ip{inp}_op{outl}_np{n}), and {len(d['latencies'])} timed iterations "
                "from its latencies list",
                CHUNKED,
            ])
    return out


def main():
    root, corpus = sys.argv[1], sys.argv[2]
    commit = git(root, "rev-parse", "HEAD").strip()
    lines = [
        "# Generated by tools/corpus-dstack/gen.py from github.com/dstackai/benchmarks",
        f"# at commit {commit}; figures only. Do not edit: regenerate.",
        "source:",
        f"  id: {SOURCE}",
        '  title: "Llama3.1-405B-Fp8 Inference Performance Comparison between 8xH100SXM5 and 8xMi300x (dstack)"',
        f"  url: https://github.com/dstackai/benchmarks/tree/{commit}/comparison/h100sxm5_vs_mi300x",
        f"  ref: \"README.md (environment and commands) and the 8xH100SXM5 result JSON files under {DIR}\"",
        "  published: 2024-12-05",
        "  notes: >-",
        "    8 x NVIDIA H100 80GB HBM3 (SXM, NVLink NV18), vLLM nightly",
        "    0.6.3.post2.dev308 in nvcr.io/nvidia/pytorch:23.10-py3 (torch 2.5.1), served as",
        "    `vllm serve meta-llama/Llama-3.1-405B-FP8 --tensor-parallel-size 8",
        "    --max-model-len 91680`; the benchmarks pass the same two flags (and",
        "    --num-scheduler-step 1, the default). Serving: benchmark_serving.py --backend",
        "    vllm --dataset-name sharegpt at --request-rate 16, 32 and 1000 (1000 prompts).",
        "    Throughput: benchmark_throughput.py with fixed input and output lengths. The",
        "    checkpoint is Meta's fbgemm_fp8 one (attention and the first and last layers'",
        "    MLPs stay BF16; vLLM logged 56.77 GiB of weights per GPU, raw_data/gpu-usage.md).",
        "    The MI300X runs of the same comparison are not recorded. Figures only.",
        "",
        "runs:",
    ]
    body = serving(root, corpus) + throughput(root)
    with open(os.path.join(corpus, f"{SOURCE}.yaml"), "w") as f:
        f.write("\n".join(lines + body[1:]) + "\n")


if __name__ == "__main__":
    main()
