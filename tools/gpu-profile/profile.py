#!/usr/bin/env python3
"""Measure the kernels servebench's step model reads from tables, on the GPU
this runs on, with PyTorch: GEMMs at the catalog models' linear shapes,
prefill and decode attention, and whole decoder layers with random weights.

Writes tab-separated files to --out (README.md beside this file lists them).
Each section stops early when the time budget (--budget-s) runs out and says
so in env.tsv, so a lease that runs short still returns what was measured.
Every figure is the median of --repeats CUDA-graph replays, each replay
running the kernel --inner times back to back: launch gaps, which vLLM's
decode steps avoid the same way, are not in it.
"""

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

DTYPE = torch.bfloat16
FP8 = getattr(torch, "float8_e4m3fn", None)
FP8_MAX = 448.0


class Budget:
    def __init__(self, seconds):
        self.deadline = time.monotonic() + seconds
        self.cut = []

    def left(self):
        return self.deadline - time.monotonic()

    def spent(self, section):
        if self.left() > 0:
            return False
        if section not in self.cut:
            self.cut.append(section)
        return True


class Timer:
    """Times a closure on the device: CUDA graphs and events on a GPU,
    wall clock on the CPU (the smoke test)."""

    def __init__(self, device, repeats, inner):
        self.device = device
        self.repeats = repeats
        self.inner = inner

    def us(self, fn, inner=None):
        inner = inner or self.inner
        if self.device.type != "cuda":
            fn()
            samples = []
            for _ in range(self.repeats):
                t0 = time.perf_counter()
                for _ in range(inner):
                    fn()
                samples.append((time.perf_counter() - t0) / inner * 1e6)
            return statistics.median(samples)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(inner):
                fn()
        graph.replay()
        torch.cuda.synchronize()
        us = self.events_us(graph.replay, inner)
        del graph
        return us

    def eager_us(self, fn):
        """Launched from Python one call at a time, as a prefill step is."""
        if self.device.type != "cuda":
            return self.us(fn, inner=1)
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        return self.events_us(fn, 1)

    def events_us(self, run, per):
        """The median over --repeats of run's GPU time between two CUDA
        events, divided by the per calls each run makes."""
        samples = []
        for _ in range(self.repeats):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e3 / per)
        return statistics.median(samples)


def write_tsv(path, header, rows):
    with open(path, "w") as f:
        f.write("\t".join(header) + "\n")
        for r in rows:
            f.write("\t".join(fmt(v) for v in r) + "\n")


def fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def gemm_section(timer, device, shapes, ms, budget, out):
    rows = []
    seen = set()
    for s in shapes:
        n, k = s["n"], s["k"]
        if (n, k) in seen:
            continue
        seen.add((n, k))
        w = torch.randn(n, k, device=device, dtype=DTYPE) / math.sqrt(k)
        for m in ms:
            if budget.spent("gemm"):
                break
            x = torch.randn(m, k, device=device, dtype=DTYPE)
            y = torch.empty(m, n, device=device, dtype=DTYPE)
            inner = 20 if m * n * k < 2**34 else 4
            us = timer.us(lambda: torch.matmul(x, w.t(), out=y), inner=inner)
            rows.append((m, n, k, us, 2 * m * n * k / us / 1e6))
        del w
        write_tsv(os.path.join(out, "gemm.tsv"), ["m", "n", "k", "us", "tflops"], rows)
    return rows


class FP8Linear:
    """W8A8 as vLLM runs FP8 checkpoints on Hopper (fbgemm_fp8, fp8):
    per-output-channel weight scales, a dynamic per-token activation scale,
    one scaled GEMM into bf16 (torch._scaled_mm: cuBLASLt, where vLLM runs
    CUTLASS). Rows are padded to a multiple of 16, which _scaled_mm needs;
    a decode GEMM is weight-bound, so the padding costs next to nothing.
    On the CPU (smoke test) the quantized weights are multiplied in bf16."""

    def __init__(self, w):
        scale = w.float().abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / FP8_MAX
        self.cuda = w.device.type == "cuda"
        self.w = (w.float() / scale).to(FP8) if self.cuda else (w.float() / scale).to(DTYPE)
        self.scale_w = scale.t().contiguous()  # [1, n]
        self.n = w.shape[0]

    def quantize(self, x):
        scale = x.abs().amax(dim=1, keepdim=True).float().clamp(min=1e-12) / FP8_MAX
        return (x / scale).to(FP8 if self.cuda else DTYPE), scale

    def __call__(self, x):
        m = x.shape[0]
        pad = -m % 16
        if pad:
            x = F.pad(x, (0, 0, 0, pad))
        xq, scale = self.quantize(x)
        return self.gemm(xq, scale)[:m]

    # Row-wise scales need PyTorch 2.5+ on Hopper; the first call (a
    # warm-up, outside graph capture) falls back to one scale per tensor,
    # which reads the same bytes, and env.tsv says which ran.
    scaling = "rowwise"

    def gemm(self, xq, scale):
        if not self.cuda:
            return (xq.float() @ self.w.float().t() * scale * self.scale_w).to(DTYPE)
        if FP8Linear.scaling == "rowwise":
            try:
                return torch._scaled_mm(xq, self.w.t(), scale_a=scale, scale_b=self.scale_w, out_dtype=DTYPE)
            except (RuntimeError, TypeError) as e:
                print(f"fp8: row-wise scaled_mm failed ({e}); per-tensor scales from here on", flush=True)
                FP8Linear.scaling = "tensorwise"
        one = torch.ones((), device=xq.device, dtype=torch.float32)
        return torch._scaled_mm(xq, self.w.t(), scale_a=one, scale_b=one, out_dtype=DTYPE)


def gemm_fp8_section(timer, device, shapes, ms, budget, out):
    """The scaled GEMM alone, its input already quantized (vLLM fuses the
    per-token quantization into one small kernel before it)."""
    rows = []
    for s in shapes:
        n, k = s["n"], s["k"]
        lin = FP8Linear(torch.randn(n, k, device=device, dtype=DTYPE) / math.sqrt(k))
        for m in ms:
            if budget.spent("gemm-fp8"):
                break
            padded = m + (-m % 16)
            x = torch.randn(m, k, device=device, dtype=DTYPE)
            xq, scale = lin.quantize(F.pad(x, (0, 0, 0, padded - m)))
            inner = 20 if m * n * k < 2**34 else 4
            us = timer.us(lambda: lin.gemm(xq, scale), inner=inner)
            # The whole linear as the layer runs it: pad, PyTorch's
            # unfused per-token quantization, the GEMM, the slice.
            whole = timer.us(lambda: lin(x), inner=inner)
            rows.append((m, padded, n, k, us, 2 * m * n * k / us / 1e6, whole))
        del lin
        write_tsv(os.path.join(out, "gemm-fp8.tsv"), ["m", "m_padded", "n", "k", "us", "tflops", "us_with_quant"], rows)
    return rows


def rms_norm(x, weight):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), weight)
    # PyTorch before 2.4 (the smoke test's Debian package) has no fused norm.
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * weight


def attention(q, k, v, causal, backend_name):
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        # PyTorch before 2.5 (smoke test only): no backend choice, no GQA.
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if causal:
            mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril(k.shape[-2] - q.shape[-2])
            scores = scores.masked_fill(~mask, float("-inf"))
        return scores.softmax(-1) @ v
    with sdpa_kernel([getattr(SDPBackend, backend_name)]):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=q.shape[1] != k.shape[1])


def pick_backend(device):
    if device.type != "cuda":
        return "MATH"
    q = torch.randn(1, 8, 128, 128, device=device, dtype=DTYPE)
    k = torch.randn(1, 2, 128, 128, device=device, dtype=DTYPE)
    for name in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH"):
        try:
            attention(q, k, k, True, name)
            return name
        except RuntimeError:
            continue
    return "MATH"


def decode_attention(q, k, v, backend):
    """One query per sequence over its whole cache, as grouped-query
    decoding runs: each KV head's query heads are its rows, so the cache is
    read once per KV head."""
    b, kv, group = q.shape[0], k.shape[1], q.shape[1] // k.shape[1]
    rows = q.view(b, kv, group, 128)
    return attention(rows, k, v, False, backend).view(b, kv * group, 1, 128)


def decode_attention_bmm(q, k, v):
    """The same decode as two cuBLAS batched products around a softmax:
    scores = q·Kᵀ, then softmax(scores)·V, each reading the cache once at
    cuBLAS's bandwidth. A second reference where FlashAttention's decode
    is not bandwidth-bound."""
    b, kv, group = q.shape[0], k.shape[1], q.shape[1] // k.shape[1]
    rows = q.view(b, kv, group, 128)
    scores = torch.matmul(rows, k.transpose(-1, -2)) * (1 / math.sqrt(128))
    return torch.matmul(scores.softmax(-1), v).view(b, kv * group, 1, 128)


def attention_section(timer, device, cfg, backend, budget, out, decode):
    """Prefill: causal attention over whole prompts of each length. Decode:
    one query per sequence over a cache of each length."""
    name = "attention-decode" if decode else "attention-prefill"
    lengths = cfg["contexts"] if decode else cfg["isl"]
    rows = []
    for heads, kv in cfg["heads"]:
        for batch in cfg["batches"]:
            for n in lengths:
                if budget.spent(name):
                    break
                q_len = 1 if decode else n
                if batch * 128 * 2 * (q_len * heads + 2 * n * kv) > cfg["max_bytes"]:
                    continue
                q = torch.randn(batch, heads, q_len, 128, device=device, dtype=DTYPE)
                k = torch.randn(batch, kv, n, 128, device=device, dtype=DTYPE)
                v = torch.randn(batch, kv, n, 128, device=device, dtype=DTYPE)
                if decode:
                    cache = batch * n * kv * 128 * 2 * 2
                    us = timer.us(lambda: decode_attention(q, k, v, backend), inner=10)
                    rows.append((n, batch, heads, kv, us, cache / us / 1e3, backend))  # GB/s of cache read
                    us = timer.us(lambda: decode_attention_bmm(q, k, v), inner=10)
                    rows.append((n, batch, heads, kv, us, cache / us / 1e3, "CUBLAS_BMM"))
                else:
                    us = timer.us(lambda: attention(q, k, v, True, backend), inner=5)
                    rate = 4 * 128 * heads * batch * n * (n + 1) / 2 / us / 1e6  # TFLOP/s
                    rows.append((n, batch, heads, kv, us, rate, backend))
                del q, k, v
    header = ["context" if decode else "isl", "batch", "heads", "kv_heads", "us", "gb_per_s" if decode else "tflops", "backend"]
    write_tsv(os.path.join(out, name + ".tsv"), header, rows)


class Layer:
    """One Llama/Qwen decoder layer with random weights, run the way vLLM
    runs it on one GPU: fused QKV and gate-up projections, RMSNorm, rotary
    embedding, causal attention for a prompt or one query per sequence over
    its cache, SiLU-and-multiply."""

    def __init__(self, m, device):
        self.m = m
        h, hd = m["hidden"], m["head_dim"]
        self.q, self.kv = m["heads"] * hd, m["kv_heads"] * hd

        def weight(n, k):
            return torch.randn(n, k, device=device, dtype=DTYPE) / math.sqrt(k)

        def linear(n, k, fp8):
            w = weight(n, k)
            if not fp8:
                return lambda x: F.linear(x, w)
            return FP8Linear(w)

        self.qkv = linear(self.q + 2 * self.kv, h, m.get("attention_fp8"))
        self.o = linear(h, self.q, m.get("attention_fp8"))
        self.gate_up = linear(2 * m["intermediate"], h, m.get("mlp_fp8"))
        self.down = linear(h, m["intermediate"], m.get("mlp_fp8"))
        self.norm1 = torch.ones(h, device=device, dtype=DTYPE)
        self.norm2 = torch.ones(h, device=device, dtype=DTYPE)
        self.qk_norm = torch.ones(hd, device=device, dtype=DTYPE) if m.get("qk_norm") else None

    def rope(self, x, cos, sin):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def forward(self, x, attend):
        m, hd = self.m, self.m["head_dim"]
        t = x.shape[0]
        r = x
        x = rms_norm(x, self.norm1)
        qkv = self.qkv(x)
        q, k, v = qkv.split([self.q, self.kv, self.kv], dim=-1)
        q, k = q.view(t, -1, hd), k.view(t, -1, hd)
        if self.qk_norm is not None:
            q, k = rms_norm(q, self.qk_norm), rms_norm(k, self.qk_norm)
        q, k = self.rope(q, self.cos[:t], self.sin[:t]), self.rope(k, self.cos[:t], self.sin[:t])
        a = attend(q, k, v.view(t, -1, hd))
        x = r + self.o(a.reshape(t, self.q))
        r = x
        x = rms_norm(x, self.norm2)
        g, u = self.gate_up(x).chunk(2, dim=-1)
        return r + self.down(F.silu(g) * u)

    def tables(self, tokens, device):
        hd = self.m["head_dim"]
        pos = torch.arange(tokens, device=device, dtype=torch.float32)
        inv = 1.0 / (1e6 ** (torch.arange(0, hd, 2, device=device, dtype=torch.float32) / hd))
        ang = torch.outer(pos, inv)
        self.cos = ang.cos().to(DTYPE)[:, None, :]
        self.sin = ang.sin().to(DTYPE)[:, None, :]


def layer_section(timer, device, cfg, models, backend, budget, out, name="layer"):
    """Whole decoder layers. For "layer-sharded" each model is one
    tensor-parallel rank's slice (its tp column), the all-reduces after
    attention and MLP left out: one GPU cannot run them."""
    rows = []
    for m in models:
        if budget.spent(name):
            break
        layer = Layer(m, device)
        layer.tables(max(cfg["prefill"]) + max(cfg["batches"]), device)
        for tokens in cfg["prefill"]:
            if budget.spent(name):
                break
            x = torch.randn(tokens, m["hidden"], device=device, dtype=DTYPE)

            def prefill(q, k, v):
                o = attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], True, backend)
                return o[0].transpose(0, 1)

            graph = timer.us(lambda: layer.forward(x, prefill), inner=2)
            eager = timer.eager_us(lambda: layer.forward(x, prefill))
            rows.append(layer_row(m, "prefill", tokens, 1, tokens, graph, eager, backend, name))
        for ctx in cfg["contexts"]:
            for batch in cfg["batches"]:
                if budget.spent(name):
                    break
                kv = m["kv_heads"]
                cache_k = torch.randn(batch, kv, ctx, m["head_dim"], device=device, dtype=DTYPE)
                cache_v = torch.randn(batch, kv, ctx, m["head_dim"], device=device, dtype=DTYPE)
                x = torch.randn(batch, m["hidden"], device=device, dtype=DTYPE)

                def decode(q, k, v):
                    # The new token's K and V go into the cache's last slot, as
                    # vLLM's reshape_and_cache writes them before attending.
                    cache_k[:, :, -1].copy_(k)
                    cache_v[:, :, -1].copy_(v)
                    return decode_attention(q[:, :, None, :], cache_k, cache_v, backend)[:, :, 0]

                graph = timer.us(lambda: layer.forward(x, decode), inner=5)
                eager = timer.eager_us(lambda: layer.forward(x, decode))
                rows.append(layer_row(m, "decode", batch, batch, ctx, graph, eager, backend, name))
                del cache_k, cache_v
        del layer
        if device.type == "cuda":
            torch.cuda.empty_cache()
        header = ["model", "mode", "tokens", "sequences", "context", "us_graph", "us_eager", "backend"]
        if name != "layer":
            header += ["tp", "mlp", "attention_proj"]
        write_tsv(os.path.join(out, name + ".tsv"), header, rows)


def layer_row(m, mode, tokens, seqs, ctx, graph, eager, backend, name):
    row = (m["name"], mode, tokens, seqs, ctx, graph, eager, backend)
    if name == "layer":
        return row
    return row + (m.get("tp", 1), "fp8" if m.get("mlp_fp8") else "bf16", "fp8" if m.get("attention_fp8") else "bf16")


def environment(device, args, budget, started, backend, failed):
    rows = [
        ("date_utc", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")),
        ("torch", torch.__version__),
        ("python", platform.python_version()),
        ("attention_backend", backend),
        ("seconds", f"{time.monotonic() - started:.0f}"),
        ("sections_cut_by_budget", ",".join(budget.cut) or "none"),
        ("sections_failed", "; ".join(failed) or "none"),
        ("fp8_scaling", FP8Linear.scaling),
    ]
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        rows += [("device", p.name), ("sms", p.multi_processor_count), ("memory_gib", f"{p.total_memory / 2**30:.1f}"),
                 ("cuda", torch.version.cuda)]
        try:
            q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem,power.limit",
                                "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
            rows.append(("nvidia_smi", q.stdout.strip()))
        except (OSError, subprocess.SubprocessError) as e:
            rows.append(("nvidia_smi", f"unavailable: {e}"))
    else:
        rows.append(("device", "cpu (smoke test; not a measurement)"))
    write_tsv(os.path.join(args.out, "env.tsv"), ["key", "value"], rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", required=True, help="JSON from `go run ./tools/gpu-profile shapes`")
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=300)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--sections", default="gemm,prefill,decode,layer,gemm-fp8,layer-sharded",
                    help="comma-separated sections to run, in this order (a lease that needs only some)")
    ap.add_argument("--smoke", action="store_true", help="tiny grids on the CPU: checks the script, measures nothing")
    args = ap.parse_args()
    started = time.monotonic()
    os.makedirs(args.out, exist_ok=True)
    with open(args.shapes) as f:
        plan = json.load(f)
    device = torch.device("cuda" if torch.cuda.is_available() and not args.smoke else "cpu")
    if device.type != "cuda" and not args.smoke:
        sys.exit("profile.py: no CUDA device; pass --smoke to check the script on the CPU")
    grid = plan["smoke"] if args.smoke else plan["grid"]
    if args.smoke:
        plan["gemms"], plan["models"] = plan["gemms"][:3], plan["models"][-1:]
        plan["gemms_fp8"] = [dict(g, n=256, k=128) for g in plan.get("gemms_fp8", [])[:1]]
        plan["sharded"] = [dict(m, hidden=64, heads=4, kv_heads=1, intermediate=96) for m in plan.get("sharded", [])]
    timer = Timer(device, 3 if args.smoke else args.repeats, 2 if args.smoke else 20)
    budget = Budget(args.budget_s)
    backend = pick_backend(device)
    torch.manual_seed(0)
    if device.type == "cuda":
        # Clocks ramp up under load; the first section must not pay for it.
        a = torch.randn(8192, 8192, device=device, dtype=DTYPE)
        until = time.monotonic() + 3
        while time.monotonic() < until:
            for _ in range(10):
                a @ a
            torch.cuda.synchronize()
        del a
    # Each section gets its share of what is left, so one slow section
    # cannot starve the others.
    shares = [("gemm", 0.25), ("prefill", 0.12), ("decode", 0.12), ("layer", 0.2), ("gemm-fp8", 0.3), ("layer-sharded", 1.0)]
    wanted = args.sections.split(",")
    unknown = [w for w in wanted if w not in dict(shares)]
    if unknown:
        sys.exit(f"profile.py: --sections {','.join(unknown)}: want some of {','.join(n for n, _ in shares)}")
    shares = [(n, s) for n, s in shares if n in wanted]
    shares[-1] = (shares[-1][0], 1.0)
    failed = []
    for name, share in shares:
        part = Budget(budget.left() * share)
        try:
            if name == "gemm":
                gemm_section(timer, device, plan["gemms"], grid["m"], part, args.out)
            elif name == "prefill":
                attention_section(timer, device, grid["attention_prefill"], backend, part, args.out, decode=False)
            elif name == "decode":
                attention_section(timer, device, grid["attention_decode"], backend, part, args.out, decode=True)
            elif name == "layer":
                layer_section(timer, device, grid["layer"], plan["models"], backend, part, args.out)
            elif name == "gemm-fp8":
                gemm_fp8_section(timer, device, plan["gemms_fp8"], grid["m"], part, args.out)
            else:
                layer_section(timer, device, grid["sharded"], plan["sharded"], backend, part, args.out, name)
        except Exception as e:  # noqa: BLE001 - one section's failure must not lose the others
            failed.append(f"{name}: {type(e).__name__}: {e}".replace("\t", " ").replace("\n", " ")[:300])
            print(failed[-1], flush=True)
        budget.cut += part.cut
        environment(device, args, budget, started, backend, failed)
        print(f"{name}: done at {time.monotonic() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
