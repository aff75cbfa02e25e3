#!/usr/bin/env python3
"""Times the CPU that vLLM's own benchmark client spends per request and per
streamed chunk.

It loads vLLM's request function for /v1/completions
(async_request_openai_completions, from the file named by --request-func;
nothing else of vLLM is imported) and drives it against a near-instant
emulated server (`servebench serve` in its fixed-latency mode), at several
output lengths and concurrencies, in one asyncio loop as vLLM's benchmark
does. For each cell it records the client process's CPU time
(time.process_time) and wall time, then fits

    cpu = requests * per_request + chunks * per_chunk

by least squares, where chunks counts the token-bearing SSE events. The
JSON it writes goes to gen_go.py.
"""
import argparse
import asyncio
import importlib.util
import json
import platform
import time


def load_request_func(path):
    spec = importlib.util.spec_from_file_location("vllm_request_func", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


async def run_cell(mod, url, model, output_len, concurrency, requests):
    sem = asyncio.Semaphore(concurrency)

    async def one(i):
        async with sem:
            inp = mod.RequestFuncInput(prompt="hello " * 8, api_url=url,
                                       prompt_len=8, output_len=output_len,
                                       model=model, ignore_eos=True)
            return await mod.async_request_openai_completions(inp)

    cpu0, wall0 = time.process_time(), time.perf_counter()
    outs = await asyncio.gather(*(one(i) for i in range(requests)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    failed = [o.error for o in outs if not o.success]
    if failed:
        raise SystemExit(f"clientcost: {len(failed)} requests failed: {failed[0][:200]}")
    chunks = sum(1 + len(o.itl) for o in outs)
    return {"output_len": output_len, "concurrency": concurrency,
            "requests": requests, "chunks": chunks,
            "cpu_s": cpu, "wall_s": wall}


def fit(rows):
    # Two-parameter least squares without numpy.
    sxx = sum(r["requests"] ** 2 for r in rows)
    syy = sum(r["chunks"] ** 2 for r in rows)
    sxy = sum(r["requests"] * r["chunks"] for r in rows)
    sxc = sum(r["requests"] * r["cpu_s"] for r in rows)
    syc = sum(r["chunks"] * r["cpu_s"] for r in rows)
    det = sxx * syy - sxy * sxy
    per_request = (sxc * syy - syc * sxy) / det
    per_chunk = (syc * sxx - sxc * sxy) / det
    return per_request, per_chunk


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
        name = [l.split(":", 1)[1].strip() for l in info.splitlines()
                if l.startswith("model name")]
        fam = [l.split(":", 1)[1].strip() for l in info.splitlines()
               if l.startswith("cpu family")]
        model = [l.split(":", 1)[1].strip() for l in info.splitlines()
                 if l.startswith("model\t")]
        if name and fam and model:
            return f"{name[0]} (family {fam[0]}, model {model[0]})"
    except OSError:
        pass
    return platform.processor() or "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--request-func", required=True,
                    help="vLLM's endpoint_request_func.py or backend_request_func.py")
    ap.add_argument("--commit", required=True, help="vLLM commit of that file")
    ap.add_argument("--url", default="http://127.0.0.1:18123/v1/completions")
    ap.add_argument("--model", default="Qwen/Qwen2.5-7B-Instruct")
    ap.add_argument("--output-lens", default="1,16,256")
    ap.add_argument("--concurrency", default="1,16,256")
    ap.add_argument("--tokens-per-cell", type=int, default=8192,
                    help="about this many tokens streamed per cell")
    ap.add_argument("--passes", type=int, default=3,
                    help="each cell runs this often; the minimum CPU counts")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    mod = load_request_func(a.request_func)
    rows = []
    for output_len in map(int, a.output_lens.split(",")):
        for conc in map(int, a.concurrency.split(",")):
            requests = max(conc, min(2048, a.tokens_per_cell // output_len))
            best = None
            for _ in range(a.passes):
                r = asyncio.run(run_cell(mod, a.url, a.model, output_len,
                                         conc, requests))
                if best is None or r["cpu_s"] < best["cpu_s"]:
                    best = r
            rows.append(best)
            print(json.dumps(best), flush=True)
    per_request, per_chunk = fit(rows)
    res = {"commit": a.commit, "request_func": a.request_func.split("/vllm/", 1)[-1],
           "cpu": cpu_name(), "python": platform.python_version(),
           "passes": a.passes, "rows": rows,
           "per_request_us": per_request * 1e6, "per_chunk_us": per_chunk * 1e6}
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"per request {res['per_request_us']:.1f} us, per chunk {res['per_chunk_us']:.1f} us")


if __name__ == "__main__":
    main()
