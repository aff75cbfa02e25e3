#!/usr/bin/env python3
"""Times the server-side CPU of an SSE completions endpoint built like
vLLM's OpenAI server (FastAPI StreamingResponse, one pydantic chunk object
serialised per token; sse_server.py), driven by vLLM's own client request
function. Reports the server process's CPU time per cell; per request and
per chunk follow from the 1-token and 256-token cells.

Usage (server first):
  python3 -m uvicorn --app-dir tools/vllm-clientcost sse_server:app --port 18124 &
  python3 tools/vllm-clientcost/apicost.py --request-func .../endpoint_request_func.py
"""
import argparse
import asyncio
import importlib.util
import json
import urllib.request


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--request-func", required=True)
    ap.add_argument("--base", default="http://127.0.0.1:18124")
    ap.add_argument("--passes", type=int, default=2)
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location("vllm_request_func", a.request_func)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def server_cpu():
        with urllib.request.urlopen(a.base + "/cpu") as r:
            return json.load(r)["cpu"]

    async def cell(n, reqs, conc):
        sem = asyncio.Semaphore(conc)

        async def one():
            async with sem:
                return await mod.async_request_openai_completions(mod.RequestFuncInput(
                    prompt="hi", api_url=a.base + "/v1/completions", prompt_len=8,
                    output_len=n, model="m"))
        outs = await asyncio.gather(*(one() for _ in range(reqs)))
        bad = [o.error for o in outs if not o.success]
        if bad:
            raise SystemExit(f"apicost: {len(bad)} requests failed: {bad[0][:200]}")

    best = {}
    for _ in range(a.passes):
        for n, reqs in [(1, 1024), (256, 32)]:
            c0 = server_cpu()
            asyncio.run(cell(n, reqs, 16))
            best[n] = min(best.get(n, 1e9), server_cpu() - c0)
    per_request = best[1] / 1024
    per_chunk = (best[256] - 32 * per_request) / (32 * 256)
    print(f"server CPU: 1-token cell {best[1]:.3f} s (1024 requests), 256-token cell "
          f"{best[256]:.3f} s (32 requests); per request {per_request * 1e6:.0f} us, "
          f"per chunk {per_chunk * 1e6:.1f} us")


if __name__ == "__main__":
    main()
