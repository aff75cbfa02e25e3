// Package perf holds the hardware and model catalog and the step-time
// models: how much KV cache vLLM allocates for a deployment (model, GPU,
// tensor and pipeline parallelism, engine flags), and how long one engine
// step of a given shape takes on it.
//
// # Catalog
//
// Models come from their Hugging Face config.json (Qwen2-0.5B, Qwen2-7B,
// Qwen2.5-7B and their -Instruct variants, Qwen2.5-7B-Instruct-GPTQ-Int4,
// Llama-3-8B, Llama-3.1-8B, Llama-3-70B, Llama-3.1-70B); LookupModel also
// reads any config.json of a dense Llama/Qwen2-style decoder. Parameter
// counts ignore norms and biases (< 0.1%) and match the reference table:
// Qwen2-0.5B 0.494 B, Qwen2-7B 7.62 B, Llama-3-8B 8.03 B, Llama-3-70B 70.6 B.
//
// GPUs carry memory as torch reports it (A100-80GB 79.15 GiB, A100-40GB
// 39.39 GiB, H100-SXM 79.11 GiB, RTX-4090 23.65 GiB, L40S 44.52 GiB, H200
// 139.8 GiB, A10 and L4 22 GiB: the figures PyTorch prints as "total
// capacity"), data-sheet bandwidth and dense tensor peaks (reference D;
// RTX-4090 at its FP32-accumulate rates, 165 TF BF16 and 330 TF FP8, which
// is what vLLM's kernels use).
//
// Efficiencies. BLIS's roofline (hardware_config.json) uses MFU
// prefill/decode 0.45/0.30 on H100, 0.38/0.18 on A100 and 0.32/0.08 on
// L40S with no bandwidth haircut, so its decode MFU absorbs the time a
// memory-bound decode waits on HBM. Here memory time is modelled
// explicitly with MBU, so MFU is what compute-bound GEMMs reach:
// prefill 0.50 (H100, H200), 0.55 (A100, RTX-4090), 0.50 (A10), 0.45 (L4,
// L40S); decode rows 0.05 lower because decode GEMMs are skinny (M = batch).
// MBU is 0.80 on HBM parts and 0.75 on GDDR parts (reference D: 0.6–0.85
// typical for vLLM decode; llm-analysis suggests ≤ 0.7–0.9). With these,
// Qwen2-7B bf16 on H100 decodes one sequence in 5.7 ms (weight-read floor
// 4.5 ms at full bandwidth; llm-d's docs give ≈ 5 ms), and decode (short
// contexts) turns compute-bound near batch 190 on H100 and 100 on A100,
// against the raw P·b_w/(2·BW) crossover of ~300 and ~150; the step time
// grows by under 2× from batch 1 to 300 (H100) and 150 (A100). A GPU YAML
// without mfu/mbu gets 0.50/0.45 and 0.75.
//
// Links (per-direction effective bandwidth, per-message latency; a ring
// all-reduce among t GPUs costs 2(t−1) messages and sends 2(t−1)/t of the
// data from each GPU):
//
//   - nvlink: 450 GB/s, 2 µs. H100 NVLink 4 is 900 GB/s bidirectional,
//     450 per direction; capped by the GPU's own NVLink rate (A100 300
//     GB/s). vLLM's custom all-reduce makes small collectives a few µs.
//   - pcie: 25 GB/s, 8 µs. PCIe 4.0 x16 moves ~21–25 GB/s in practice
//     (the P2pNccl doc measures 21 GB/s host spill); NCCL over PCIe P2P
//     costs ~10–20 µs per small collective.
//   - infiniband: 40 GB/s, 5 µs. NDR 400 Gb/s is 50 GB/s line rate; NCCL
//     with GPUDirect RDMA reaches ~80% of it (llm-d-inference-sim uses 40
//     GB/s for IB NDR) with a few µs per message.
//   - ethernet: 10 GB/s, 60 µs. 100 GbE effective rate as in
//     llm-d-inference-sim (real ≈ 60–80% of line rate). Without GPUDirect,
//     NCCL's socket transport stages every message through host memory and
//     a proxy thread on top of kernel TCP (~10–25 µs one way), so a
//     two-rank all-reduce takes ~120 µs [inferred]. Llama-3-8B at TP=2 then
//     decodes 3–4× slower across two nodes than over NVLink.
//
// Swap copies use the GPU's PCIe rate (25 GB/s; 50 GB/s for PCIe 5.0 H100
// and H200).
//
// # KV capacity (Deployment.Capacity)
//
// vLLM profiles a dummy batch and keeps what is left of
// memory·gpu_memory_utilization for the cache; every rank does this and the
// smallest block count wins, so the busiest rank decides:
//
//	blocks = floor((memory·util − weights − activation peak − non-torch) / block bytes)
//	block bytes = block_size · 2 · stage layers · max(1, H_kv/t) · d_h · b_kv
//	CPU blocks (V0) = floor(swap GiB · 2^30 / block bytes)
//
// Weights per rank are the stage's linear weights divided by TP plus the
// vocab-parallel embedding/lm_head shards (with PP the first stage holds the
// embedding and the last the lm_head, a separate copy even when tied).
// GPTQ/AWQ linear weights cost bits/8 bytes plus one fp16 scale and one
// packed zero point per group of group_size input rows; FP8 1 byte;
// embeddings and lm_head stay 16-bit (Qwen2.5-7B GPTQ-Int4: 5.57 GB).
//
// Activation peak = max_num_batched_tokens · 2 B · (3·f/t + 4·d) + min(
// max_num_seqs, max_num_batched_tokens) · V · 4 B: the SwiGLU gate/up output
// and product plus hidden-sized buffers of the dummy batch, and fp32 logits
// of the dummy sampler run. It brackets vLLM's logs: Llama-3-8B shows 1.26
// GiB at 8192 tokens on H100 (vLLM 0.6.5, PR #10511; this formula 1.03
// GiB), and 2.07 GiB at 20000 tokens on an RTX 3090 (vLLM 0.6.3, issue
// #10517; this formula 2.33 GiB).
//
// Non-torch memory (CUDA context, cuBLAS/attention workspaces) is 1.25 GiB
// on one GPU and 3.0 GiB with more than one (NCCL and custom all-reduce
// buffers): vLLM measured 0.35 GiB on a 3090 (0.6.3 accounting) and 1.79
// GiB on an H100 (0.6.5), which doubled to 3.58 GiB at TP=2.
//
// CUDA graphs: vLLM 0.5–0.8 capture graphs after the KV cache is sized, so
// graph memory comes out of the (1 − util) headroom and EnforceEager does
// not change the block count here.
//
// Defaults (Deployment.Resolve): max_model_len from config.json (the
// smallest of vLLM's length keys, scaled by rope_scaling factor for
// linear/dynamic/yarn as vLLM 0.5.4 does); max_num_batched_tokens and
// max_num_seqs as vLLM 0.5.4 (V0) and 0.8.5 (V1) pick them.
//
// Worked number: Qwen2-7B on one H100 at 0.9, V1 defaults (max_model_len
// 131072, 8192 batched tokens, 1024 sequences): 71.2 GiB budget − 14.19 GiB
// weights − 1.67 GiB activations − 1.25 GiB non-torch = 54.1 GiB for KV =
// 63,310 blocks of 896 KiB = 1,012,960 tokens. (Reference D's "≈ 749 k
// tokens" assumes 40 GB of KV; an 80 GB H100 leaves ~54 GiB.) Llama-3-70B
// (131 GiB of weights) on one A100-80GB fails with "No available memory
// for the cache blocks".
//
// Errors carry vLLM's exact text (StartupError). V1's "max seq len" error
// uses the wording of vLLM ≥ 0.9 (PR #18966), which completes the
// "estimated maximum model length" sentence that 0.8.5 printed truncated.
//
// # Roofline step model
//
// Per pipeline stage and per GPU (t = TP):
//
//	compute = 2·N_lin/t·(P/MFU_prefill + D/MFU_decode)/peak + 4·L·(H/t)·d_h·AttnPairs/(peak_bf16·MFU_prefill)
//	        + 2·S·V·d/t/(peak_bf16·MFU_decode)                     (lm_head, last stage)
//	memory  = (weights/t + KV bytes/t·KVTokens + activations·T + lm_head/t)/(BW·MBU)
//	GPU     = Σ_stages max(compute, memory)
//
// where P = prefill tokens, D = decodes, T = P + D, S = sequences that
// sample. GEMMs run at the FP8 peak for FP8 checkpoints on GPUs with FP8
// units and at the BF16 peak otherwise (W4A16 GPTQ/AWQ kernels compute in
// 16 bits). Activation traffic per token and layer is each intermediate
// tensor written once: 2 B·(6·d + (2H + 2H_kv)·d_h/t + 3·f/t).
//
// Communication, added to the GPU time (vLLM does not overlap it):
// 2 all-reduces per layer plus one for the embedding, each a ring of T·d·2
// bytes; a gather of S·V·2 bytes of logits; with PP, one send of hidden
// state and residual (2·T·d·2 bytes) per stage boundary. Stages run one
// after another: the model gives one batch's latency, not the throughput of
// vLLM V0's several virtual engines in flight.
//
// Swap: each swapped block costs its bytes over PCIe plus 2 µs for each of
// the 2·layers cudaMemcpyAsync calls vLLM issues per block.
//
// CPU overhead per step: V1 0.4 ms + 2 µs per scheduled sequence; V0
// 1.0 ms + 10 µs per sequence (V0 schedules, prepares inputs, samples and
// detokenizes in one Python process between forward passes; V1 overlaps
// much of it). Steps that run without CUDA graphs add 25 µs of launch gaps
// per layer: all steps with EnforceEager; otherwise V0 steps with a
// prefill or more than 256 decodes, and V1 steps over 512 tokens. BLIS
// fits the same shape (β5·layers + β6·batch + β7).
//
// Not modelled: kernel-level effects (tile quantisation, attention kernel
// choice, FlashInfer vs FlashAttention), L2 reuse, prefix-cache copy-on-
// write, speculative decoding, MoE, LoRA, sliding windows, sampling
// parameters (top-k, penalties), CUDA-graph padding of batch sizes, the
// V0 fallback to eager for contexts above max_seq_len_to_capture, overlap
// of communication with compute, pipelining of several batches, and GPU
// clocks or thermals. Calibrated replaces the roofline with a linear fit
// when measurements exist.
package perf
