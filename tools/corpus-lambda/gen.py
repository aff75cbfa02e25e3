#!/usr/bin/env python3
"""Writes validate/corpus/lambda-vllm-benchmark.yaml from Lambda's vLLM
benchmark repository (github.com/LambdaLabsML/vllm-benchmark): its result
files of 2024-09-07 (vLLM 0.6.0 with 10 scheduler steps) for 10 ShareGPT
prompts sent at once, on 1, 2, 4 and 8 H100 SXM (--max-model-len 2048) and
A100 SXM 80GB (--max-model-len 2000), for the models perf's catalog holds.

Usage: gen.py RESULTS_DIR COMMIT CORPUS_DIR A100_COMMIT

RESULTS_DIR holds the repository's results/ tree (results/prompt_10/
<N>xH100-80GB-SXM/<model>_tp<N>_len2048.json and <N>xA100-80GB-SXM/
<model>_tp<N>_len2000.json, as benchmark_serving.py --save-result wrote
them); COMMIT is the repository commit the H100 files were read at and
A100_COMMIT the one of the A100 files (the index holds their 2024-09-07
versions at different commits); CORPUS_DIR is validate/corpus. It writes
CORPUS_DIR/<SOURCE>.yaml and
each run's per-request input_lens, output_lens and ttfts under
CORPUS_DIR/lengths/<SOURCE>/. Only figures are read (the result files'
summary keys and those three arrays); no text, no code. Standard library
only.
"""
import json
import os
import sys

SOURCE = "lambda-vllm-benchmark"
DATE = "20240907"  # the 0.6.0 + 10 scheduler steps batch (README.md of the corpus source)
PROMPTS = 10

# The batch's servers: the corpus's GPU name, the result directory, the
# --max-model-len its file names carry, and the run id's prefix.
SERVERS = (
    ("H100-SXM", "{n}xH100-80GB-SXM", 2048, "h100"),
    ("A100-80GB", "{n}xA100-80GB-SXM", 2000, "a100"),
)

# Result-file model stem -> (HF id the corpus names, run id part). Models
# outside perf's catalog (Mistral-Nemo, Mistral-Large, Mixtral-8x22B) and
# the FP8 checkpoints, whose configs are not committed, are left out.
MODELS = {
    "Meta-Llama-3-8B-Instruct": ("meta-llama/Meta-Llama-3-8B-Instruct", "llama3-8b"),
    "Meta-Llama-3-70B-Instruct": ("meta-llama/Meta-Llama-3-70B-Instruct", "llama3-70b"),
    "Mistral-7B-Instruct-v0.3": ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b"),
    "Mixtral-8x7B-Instruct-v0.1": ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
}
GPUS = (1, 2, 4, 8)

# What the files show that sim does not model, by run (read from their
# ttfts and itls; nothing is corrected for it).
NOTES = {
    "mixtral-8x7b": "every Mixtral run's first tokens came 1.5-1.9 s after the prompts at TP 2, 4 and 8 alike, "
                    "on the H100s and the A100s (its ttfts), 17 to 36 times the dense models' of the same "
                    "servers, while its later "
                    "chunks kept the pace of its decode steps: a one-time cost, which sim takes for vLLM 0.6.0 "
                    "compiling its Triton fused-MoE kernel for the ten prompts' batch on the container's empty "
                    "Triton cache (cold_start) [inferred]",
    "h100x8-mistral-7b-sharegpt10": "the first eight chunks of every request came 0.12-0.23 s apart and the "
                                    "later ones about 0.03 s (its itls), so its TTFT and TPOT carry a one-time "
                                    "cost of the run's start [inferred]; sim compiles nothing for a dense model",
}


def fmt(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def runs(root, commits):
    for gpu, gpu_dir, max_len, prefix in SERVERS:
        for n in GPUS:
            for stem, (model, short) in MODELS.items():
                path = os.path.join(root, "results", f"prompt_{PROMPTS}", gpu_dir.format(n=n),
                                    f"{stem}_tp{n}_len{max_len}.json")
                if not os.path.exists(path):
                    continue
                with open(path) as f:
                    d = json.load(f)
                if not str(d.get("date", "")).startswith(DATE) or "completed" not in d:
                    continue  # another batch (vLLM 0.5.4), or a failed start the repository records as {"reason": ...}
                yield (gpu, max_len, n, model, f"{prefix}x{n}-{short}-sharegpt{PROMPTS}", os.path.relpath(path, root),
                       commits[gpu], d)


def write_lengths(corpus, rid, d):
    rel = f"lengths/{SOURCE}/{rid}.json"
    os.makedirs(os.path.join(corpus, os.path.dirname(rel)), exist_ok=True)
    with open(os.path.join(corpus, rel), "w") as f:
        ttfts = [round(t, 6) for t in d["ttfts"]]
        json.dump({"input_lens": d["input_lens"], "output_lens": d["output_lens"], "ttfts": ttfts}, f,
                  separators=(",", ":"))
        f.write("\n")
    return rel


def run_lines(corpus, gpu, max_len, n, model, rid, path, commit, d):
    lengths = write_lengths(corpus, rid, d)
    k = d["completed"]
    keys = ["completed", "duration", "total_input_tokens", "total_output_tokens", "request_throughput",
            "input_throughput", "output_throughput"]
    for m in ("ttft", "tpot", "itl"):
        keys += [f"mean_{m}_ms", f"median_{m}_ms", f"p99_{m}_ms"]
    pub = [(key, d[key]) for key in keys]
    pub += [(f"{s}_e2el_ms", d[f"{s}_latency_ms"]) for s in ("mean", "median", "p99") if f"{s}_latency_ms" in d]
    args = ["--max-model-len", str(max_len), "--gpu-memory-utilization", "0.95", "--max-num-seqs", "1024",
            "--num-scheduler-steps", "10"]
    if n > 1:
        args += ["--tensor-parallel-size", str(n)]
    empty = sum(1 for t, o in zip(d["ttfts"], d["output_lens"]) if t == 0 and o == 0)
    uncertain = [
        f"ref: {path}; date {d['date']}" + ("" if gpu == "H100-SXM" else f"; read at commit {commit[:7]}"),
        "vLLM 0.6.0 with --num-scheduler-steps 10: the repository's scripts pin the vllm/vllm-openai:v0.5.4 image, "
        "but this batch streams its tokens in chunks of ten (median ITL ten times the median TPOT), which only "
        "0.6.0's multi-step scheduling does, and the repository's report compares v0.5.4 with \"v0.6.0+step10\"; "
        "0.6.1 followed on 2024-09-11",
        "the server command of this batch is not recorded: --max-model-len comes from the file name and the TP "
        "size from the GPU count; --gpu-memory-utilization 0.95 and --max-num-seqs 1024 are the defaults of the "
        "repository's benchmark.py as stored (commit 29dd18a), and Llama-3-70B in bf16 fitting two "
        f"{gpu.split('-')[0]}s at all needs more than vLLM's default 0.9; ten prompts of at most {max_len:,} tokens "
        "reach neither limit otherwise",
        f"ShareGPT replayed with the run's own per-request lengths ({lengths}); input_len and output_len are their "
        f"means, {d['total_input_tokens']} / {k} and {d['total_output_tokens']} / {k} (no --ignore-eos; a reply "
        "the client counted as 0 tokens is simulated as 1)",
    ]
    uncertain.append(
        "cold Triton cache: the repository's benchmark.sh runs each batch in a fresh container (docker run --rm "
        "with only ~/.cache/huggingface mounted), so the server's ~/.triton starts empty")
    for key, note in NOTES.items():
        if key in rid:
            uncertain.append(note)
    if empty:
        uncertain.append(
            f"{empty} of the {k} replies carried no text: vLLM's client of the time left their TTFT at 0.0 and "
            "counted 0 tokens, and those zeros are in its means and percentiles; the replay reports them the same way")
    lines = [
        "",
        f"  - id: {rid}",
        "    split: holdout",
        "    regime: serving-saturated",
        "    benchmark: serving",
        f"    gpu: {gpu}",
        f"    gpu_count: {n}",
        f"    tensor_parallel: {n}",
        "    pipeline_parallel: 1",
        f"    model: {model}",
        '    quantization: ""',
        "    dtype: auto",
        "    kv_cache_dtype: auto",
        "    vllm_version: 0.6.0",
        "    engine: v0",
        "    server_args: [" + ", ".join(f'"{a}"' for a in args) + "]",
        "    cold_start: true",
        "    workload:",
        "      dataset: sharegpt",
        f"      input_len: {round(d['total_input_tokens'] / k)}",
        f"      output_len: {round(d['total_output_tokens'] / k)}",
        "      range_ratio: 0",
        "      prefix_len: 0",
        f"      num_prompts: {d['num_prompts']}",
        "      request_rate: inf",
        "      max_concurrency: 0",
        "      burstiness: 1",
        "      batch_size: 0",
        "      ignore_eos: false",
        f"      lengths: {lengths}",
        "    published:",
    ] + [f"      {key}: {fmt(v)}" for key, v in pub] + ["    uncertain:"] + [
        '      - "' + u.replace('"', '\\"') + '"' for u in uncertain]
    return lines


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: gen.py RESULTS_DIR COMMIT CORPUS_DIR A100_COMMIT")
    root, commit, corpus, a100_commit = sys.argv[1:]
    commits = {"H100-SXM": commit, "A100-80GB": a100_commit}
    lines = [
        "# Generated by tools/corpus-lambda/gen.py from github.com/LambdaLabsML/vllm-benchmark",
        f"# at commit {commit} (A100 files at {a100_commit}); figures only. Do not edit: regenerate.",
        "source:",
        f"  id: {SOURCE}",
        '  title: "LLMs inference benchmarks, using vLLM, on Lambda Cloud (LambdaLabsML/vllm-benchmark)"',
        f"  url: https://github.com/LambdaLabsML/vllm-benchmark/tree/{commit}/results",
        f'  ref: "result files results/prompt_{PROMPTS}/<N>xH100-80GB-SXM/<model>_tp<N>_len2048.json and '
        f'<N>xA100-80GB-SXM/<model>_tp<N>_len2000.json dated {DATE}"',
        "  published: 2024-09-07",
        "  notes: >-",
        "    Lambda Cloud servers of 1, 2, 4 and 8 NVIDIA H100 80GB SXM and of 1, 2, 4",
        "    and 8 A100 80GB SXM, one vLLM OpenAI server per run (python3 -m",
        "    vllm.entrypoints.openai.api_server --model M --max-model-len L (2048 on the",
        "    H100s, 2000 on the A100s) --gpu-memory-utilization 0.95 --max-num-seqs 1024,",
        "    --tensor-parallel-size N above one GPU; see each run's uncertain) and vLLM's",
        "    benchmark_serving.py --backend vllm --endpoint /v1/completions --dataset-name",
        f"    sharegpt --num-prompts {PROMPTS} (every prompt at once, no --ignore-eos), its",
        "    --save-result files. Only this batch's bf16 checkpoints of models in perf's",
        "    catalog are recorded. Figures only.",
        "",
        "runs:",
    ]
    body = []
    for run in runs(root, commits):
        body += run_lines(corpus, *run)
    if not body:
        sys.exit("no result files of the batch under " + root)
    with open(os.path.join(corpus, f"{SOURCE}.yaml"), "w") as f:
        f.write("\n".join(lines + body[1:]) + "\n")


if __name__ == "__main__":
    main()
