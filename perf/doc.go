// Package perf holds the hardware and model catalog and the step-time
// models: how much KV cache vLLM allocates for a deployment (model, GPU,
// tensor and pipeline parallelism, engine flags), and how long one engine
// step of a given shape takes on it.
//
// # Catalog
//
// Models come from their Hugging Face config.json (the values of each
// model's published config.json on its Hugging Face model card; the
// published parameter counts below check them). LookupModel also reads any
// config.json of a Llama/Qwen/Mistral/Gemma-style decoder or of a Mixtral,
// Qwen-MoE or DeepSeek-V2/V3 MoE; LookupModelInCache first resolves a
// Hugging Face id from the local hub cache (HF_HUB_CACHE, HF_HOME/hub,
// ~/.cache/huggingface/hub: models--ORG--NAME/snapshots/<refs/main>/), never
// downloading. Parameter counts ignore norms and biases (< 0.1%):
//
//   - Dense: Qwen2-0.5B 0.494 B, Qwen2-7B/Qwen2.5-7B 7.62 B, Llama-3-8B/3.1-8B
//     8.03 B, Llama-3-70B/3.1-70B/3.3-70B 70.6 B (reference D); Llama-3.2-1B
//     1.24 B and 3B 3.21 B (tied, head_dim 64 and 128, vocab 128256);
//     Mistral-7B-v0.3 7.25 B (vocab 32768, no sliding window); Qwen2.5
//     Instruct 0.5B/1.5B/3B (tied) and 14B/32B/72B (14.8, 32.8, 72.7 B;
//     all max_position_embeddings 32768); Qwen3 0.6B/1.7B/4B (tied),
//     8B/14B/32B (8.19, 14.8, 32.8 B; head_dim 128, 8 KV heads, 40960
//     positions); Gemma-2-9B 9.24 B and 27B 27.2 B (vocab 256000, tied,
//     head_dim 256 and 128: maxtext's hf_model_configs.py carries the same
//     values).
//   - MoE: Mixtral-8x7B 46.7 B total / 12.9 B active (8 experts, top-2,
//     expert width intermediate_size 14336); Mixtral-8x22B 141 / 39 B;
//     Qwen1.5-MoE-A2.7B 14.3 / 2.7 B (60 experts, top-4, 1408 wide, one
//     shared expert of 5632); Qwen3-30B-A3B 30.5 / 3.3 B (128 experts,
//     top-8, 768 wide); Qwen3-235B-A22B 235 / 22 B (94 layers, 1536 wide);
//     DeepSeek-V2-Lite 15.7 / 2.4 B (64 routed + 2 shared experts of 1408,
//     top-6, first layer dense, MLA with kv_lora_rank 512 and
//     qk_rope_head_dim 64); DeepSeek-V3 671 / 37 B (256 routed + 1 shared
//     of 2048, top-8, first 3 layers dense, q_lora_rank 1536, FP8
//     checkpoint; the 14 B multi-token-prediction layer is not loaded
//     without speculative decoding). These totals are the model cards'
//     figures; the Megatron configs in slime (Qwen3-235B-A22B) and
//     Megatron-Bridge (DeepSeek-V2/V2-Lite) use the same shapes.
//
// GPUs carry memory as torch reports it (A100-80GB 79.15 GiB, A100-40GB
// 39.39 GiB, H100-SXM 79.11 GiB, RTX-4090 23.65 GiB, L40S 44.52 GiB, H200
// 139.8 GiB, A10 and L4 22 GiB: the figures PyTorch prints as "total
// capacity"), data-sheet bandwidth and dense tensor peaks (reference D;
// RTX-4090 at its FP32-accumulate rates, 165 TF BF16 and 330 TF FP8, which
// is what vLLM's kernels use). The newer parts:
//
//   - H20: 96 GB HBM3, 4.0 TB/s, 148 TF dense FP16/BF16, 296 TF FP8/INT8,
//     NVLink 900 GB/s (450 per direction), NVIDIA's H20 specification as
//     quoted by GPU spec pages; torch memory 94.93 GiB is inferred by
//     scaling the H100's 79.11 GiB of 80 GB.
//   - B200 (HGX, 1000 W): 2.25 PF dense BF16, 4.5 PF dense FP8/INT8,
//     8 TB/s HBM3e, NVLink 5 at 1.8 TB/s (900 per direction); 178.35 GiB
//     total global memory as CUDA reports it (pytorch/ao PR #4002, which
//     also measures the bus at 7.67 TB/s).
//   - MI300X: 192 GB HBM3 at 5.3 TB/s, 1307.4 TF dense BF16, 2614.9 TF
//     FP8 (AMD Instinct MI300X data sheet), Infinity Fabric 896 GB/s
//     aggregate peer bandwidth (448 per direction) as its "NVLink"; memory
//     191.5 GiB [inferred: ROCm keeps a little of the 192 GiB]; GDDR-like
//     efficiencies (MFU 0.45/0.40, MBU 0.75) because ROCm kernels reach a
//     smaller share of peak than CUDA's [inferred]; its dense weights are
//     read at hipBLASLt's measured rates (Efficiency tables, below).
//
// The parts the published-runs corpus (validate/corpus) was measured on.
// PCIe cards' optional NVLink bridges join only two GPUs, so they keep
// NVLinkBandwidth 0 and a PCIe default link (pass --link nvlink for a
// bridged pair):
//
//   - A10G (AWS G5): no NVIDIA data sheet. Memory 22515 MiB and 80 SMs as
//     torch reports them in nm-vllm's nightly benchmark context
//     (neuralmagic/nm-vllm, branch nm-gh-pages, dev/bench/data.js,
//     "total_memory=22515MB, multi_processor_count=80"; PrunaAI's
//     results.json files print the same 22515.75 MiB); 600 GB/s, the A10's
//     384-bit GDDR6 [inferred: AWS lists 24 GB per GPU]; dense BF16/FP16
//     70 TF and INT8 140 TOPS: the A10G's tensor pipes run at half the
//     A10's rate per SM and clock (80 SMs, but 70 TF against the A10's
//     125 with 72; Baseten's "NVIDIA A10 vs A10G" compares the two data
//     sheets: "the A10 prioritizes tensor compute"). Measured on an A10G
//     (zzc0721/torch-performance-test-data issue #126, torch 2.7.0
//     cu128): square BF16 matmuls reach 47.9, 60.6, 62.5, 66.6 and 69.5
//     TF at 1024, 2048, 4096, 8192 and 10240, TF32 34.7 TF; the former
//     138.9 TF (the A10's 125 scaled by 80/72 SMs) is twice what the part
//     can do. INT8 is twice BF16, as on every Ampere part [inferred].
//     PCIe 4.0, no NVLink (g5.12xlarge joins its 4 GPUs over PCIe).
//     Efficiencies as the A10.
//   - A40: 48 GB GDDR6 at 696 GB/s, 149.7 TF dense BF16, 299.3 TOPS
//     INT8, no FP8, PCIe 4.0, NVLink bridge 112.5 GB/s for two GPUs
//     (NVIDIA A40 data sheet, as reseller spec pages reproduce it; the
//     GA102 whitepaper gives 56.25 GB/s per direction). Memory 44.52 GiB
//     as the L40S's 48 GB [inferred]. Efficiencies as the A10 (same die).
//   - L40: 48 GB GDDR6 at 864 GB/s, 181.05 TF dense BF16, 362 TF FP8 and
//     362 TOPS INT8 (the L40S figures are 362.05 and 733), PCIe 4.0, no
//     NVLink (NVIDIA L40/L40S data sheet). Memory as the L40S [inferred];
//     efficiencies as the L40S.
//   - A100-40GB-PCIe and A100-80GB-PCIe: the SXM parts' 312 TF BF16 and
//     624 TOPS INT8 at 1555 and 1935 GB/s, PCIe 4.0, NVLink bridge 600
//     GB/s for two GPUs (NVIDIA A100 data sheet). torch reports 40339 MiB
//     for an "NVIDIA A100-PCIE-40GB" (PrunaAI results.json); the 80 GB card
//     takes the SXM's 79.15 GiB [inferred]. Efficiencies as the A100.
//   - H100-PCIe: 114 SMs, 2000 GB/s HBM2e, 756 TF dense BF16, 1513 TF
//     FP8 and 1513 TOPS INT8, PCIe 5.0 (128 GB/s), NVLink bridge 600 GB/s
//     (NVIDIA H100 data sheet, whose table halves the sparse figures 1513
//     and 3026; product brief PB-11133-001: "greater than 2,000 GBps").
//     Memory as the SXM's 79.11 GiB [inferred]; efficiencies as the SXM
//     [assumption: same SM at a lower power limit].
//   - H100-NVL: 94 GB HBM3 at 3.9 TB/s, 835.5 TF dense BF16 and 1670.5 TF
//     FP8/INT8 (the data sheet's 1,671 and 3,341 with sparsity, halved),
//     PCIe 5.0, NVLink bridge 600 GB/s for two cards (NVIDIA H100 data
//     sheet, H100 NVL column). Memory 92.96 GiB [inferred: the SXM's
//     79.11 GiB of 80 GB, scaled to 94 GB]; efficiencies as the SXM
//     [assumption: same SM at a lower power limit].
//   - MI325X: 256 GB HBM3E at 6 TB/s, 1307.4 TF dense BF16 and 2614.9 TF
//     FP8 (the MI300X's compute), seven Infinity Fabric links as the
//     MI300X (448 GB/s per direction), PCIe 5.0 (AMD Instinct MI325X
//     specifications). Memory 255.5 GiB [inferred as the MI300X's]. ROCm:
//     GPTQ/AWQ run ExLlama, as on the MI300X; efficiencies as the MI300X.
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
// Since the efficiency tables below, catalog GPUs take their compute
// rates from the tables (these MFU values remain the GEMM rows of A10, L4,
// L40S and RTX-4090, and the flat rates of GPU YAML files); MBU is as
// stated here.
//
// # Efficiency tables (efficiency.go)
//
// The roofline's efficiencies. They time steps only where no kernel table
// does (below: MI300X, GPU YAML files, Deployment.NoKernelTables); catalog
// GPUs take them from these tables, a GPU YAML keeps its flat mfu/mbu.
// Measured sources, then assumptions:
//
//   - Saturated BF16 GEMM rate per family (fraction of the dense peak):
//     A100 0.869 (271.2 of 312 TF), H100 0.803 (794.5 of 989; "H200 is the
//     same"), B200 0.776 (1745 of 2250), MI300X 0.514 (668.4 of 1300 with
//     TunableOp): the Maximum Achievable Matmul FLOPS table of
//     stas00/ml-engineering (compute/accelerator/README.md). FP8 GEMMs:
//     H100 0.709, H200 0.734, B200 0.763 of the FP8 peak (same table).
//     L4 0.586, L40S 0.744, RTX-4090 1.0, H20 0.960, H100-PCIe 0.656 and
//     A100-40GB-PCIe 0.750: one script's best BF16 matmul on each over its
//     data sheet's peak (below, "GPUs without a table": the same rates
//     scale derived parts' kernel-table times; the RTX 4090's 1.009 is
//     capped at 1, that card boosting above its data sheet's clock). A10:
//     no public matmul measurement found; the catalog's MFU above (0.50)
//     stands [assumption]. cuBLAS on an L20 (Ada, 105–115 of 119.5 TF,
//     DefTruth/CUDA-Learn-Notes hgemm) is another unthrottled Ada die.
//     Their FP8 rows and MI300X's use H100's FP8/BF16 ratio (0.709/0.803)
//     or its BF16 value, their attention rows their architecture's
//     attention/GEMM ratio [assumption]. Parts without a row of their own
//     take the row of their die: A10G and A40 the A10's, L40 the L40S's,
//     A100-80GB-PCIe and H100-NVL their SXM parts', MI325X the MI300X's
//     [assumption].
//   - GEMM rate by tokens per step (M): XLA's measured matmul table
//     (tensorflow/third_party/xla/.../matmul_interpolator_data.h, sm_90,
//     n = k = 4096) gives 412.0, 738.5 and 783.3 TF at M = 256, 1024 and
//     4096, i.e. 0.526, 0.943 and 1 of saturation; interpolated in log2 M,
//     held below 256 (those steps are weight-bandwidth bound) and above
//     4096. The same H100 shape is applied to every family [assumption].
//     Prefill and decode rows of one step share the GEMM, so M is the
//     step's prefill plus decode tokens; decode-only steps (weight-bound)
//     take the saturated rate, since at small M the measured slowdown is
//     the weight read, which the memory term already counts.
//   - Attention by context: FlashAttention-3 forward on H100, head dim
//     128 (pytorch/benchmark PR #2391): 430.3, 517.1, 565.5, 590.2, 614.2,
//     620.7 TF at 512, 1k, 2k, 4k, 8k, 16k; the saturated rate 620.7/989 =
//     0.628 is H100's attention row, and the shape applies to all GPUs at
//     the step's mean keys per query (AttnPairs / tokens), held at the 16k
//     value up to 128k [assumption: saturated]. A100: FlashAttention-2
//     reaches 50–73% of peak (Dao 2023, arXiv:2307.08691), row 0.73. Other
//     families: their GEMM row times the FA/GEMM ratio of H100 (Hopper,
//     Blackwell, MI300X) or A100 (Ampere, Ada) [assumption].
//   - Quantization kernels (QuantKernelFor, KernelPolicy): today's vLLM
//     runs GPTQ/AWQ through gptq_marlin/awq_marlin on NVIDIA compute
//     capability ≥ 8.0, ExLlama on ROCm (Marlin needs NVIDIA ≥ 8.0, IST-DASLab/marlin
//     README), FP8 as W8A8 on FP8 tensor cores and as W8A16 FP8 Marlin
//     without them (vLLM FP8 docs). Prefill factor (large-M GEMM relative
//     to cuBLAS): Marlin 9.68/12.2 = 0.79 (IBM/text-generation-inference
//     PR #66: Llama-70B 4-bit on A100, 1k context, batch 16, prefill 12.2 s
//     Marlin vs 9.68 s ExLlamaV2, which dequantizes to cuBLAS at large M
//     as IST-DASLab/marlin issue #2 shows); on the GA102 die (A10, A10G,
//     A40: the parts whose GEMMs come from the A40's table) 3835.1/3903.2
//     = 0.98, measured on the A10G [assumption: the same ratio on the A10
//     and A40; why Marlin keeps up there and not on the A100 is not
//     established]: nm-vllm's A10G nightly (nm-gh-pages f3a6431, 2024-03-16)
//     prefilled one 2,048-token prompt of OpenHermes-2.5-Mistral-7B at
//     3,835.1 tokens/s from its Marlin checkpoint and 3,903.2 from fp16.
//     Its prompts of 16–1,024 tokens check the curve
//     (TestGA102MarlinPrefill: Marlin/fp16 within 5% at six of eight
//     lengths, +10% at 256 and +24% at 128 tokens; the A100's factor had
//     Marlin 7–18% slow from 32 to 2,048 tokens but 128). ExLlama 1.
//     Decode factor (attained weight bandwidth relative to the dense
//     kernel's): Marlin 1
//     (its README: the ideal 3.87× over FP16 up to batch 16–32); ExLlama 1
//     at batch 1 and 38.57/79.7 = 0.48 at batch 16 (same TGI run: decode
//     38.57 s vs 79.7 s), held beyond; FP8 W8A8 1 [assumption: no
//     measurement of FP8 GEMV bandwidth found]. Bytes per weight come from
//     the checkpoint format (below), so W4A16 decode streams ~3.9× fewer.
//     Per release (package vllm sets KernelPolicy): GPTQ checkpoints were
//     converted to Marlin automatically from vLLM PR #3922 (merged
//     2024-04-29, after 0.4.1's version bump on 04-19: 0.4.2 on), and ran
//     ExLlamaV2 before;
//     AWQ from PR #6612 in 0.5.3 (vLLM PR #6654's note: "vLLM 0.5.3 is
//     released tomorrow"), and the AutoAWQ GEMM kernel in 0.5.0–0.5.2,
//     whose decode reaches 79/102 of Marlin's tokens/s at batch 1 and
//     1678/2476 at batch 64 (sgl-project/sglang#28, SOLAR-10.7B 4-bit);
//     its prefill dequantizes to cuBLAS (factor 1). FP8: W8A8 on FP8
//     tensor cores (Ada, Hopper, Blackwell), weight-only FP8 Marlin on
//     Ampere. Attention: the Hopper tables time FlashAttention 3, which
//     vLLM runs there from PR #12093 (0.7.0); before, prefill attention
//     on Hopper takes fa2OverFA3 times the table's time by prompt length
//     (KernelPolicy.HopperFA2: 1 up to 256 tokens, 1.31 at 1K, 1.7 from
//     4K; the median of PyTorch's FlashAttention 2 on our own H100 SXM and
//     H200 over the tables, TestFA2OverFA3MatchesProfiles). Decode is
//     left as is: there the two agree within 4% (median). In every
//     release, --quantization gptq or awq named
//     explicitly keeps the older kernel (PR #3922's description:
//     quantization="gptq" "uses old gptq kernels"; vllm's kernelPolicy).
//   - Decode bandwidth (MBU) stays flat in tokens per step (the values
//     above): no public per-batch measurement was found [assumption]; ECC
//     costs GDDR parts 10–15% of bandwidth (Marlin README), inside the
//     0.75.
//   - Dense weights on the MI300X and MI325X (hipBLASLtWeightRate): vLLM
//     runs an unquantized (or FP8) linear layer on ROCm through hipBLASLt,
//     and from PR #15830 (vLLM 0.8.5; KernelPolicy.ROCmSkinnyRows) the
//     bf16/fp16 ones of steps of one or two rows through its own wvSplitK
//     kernels. AMD timed
//     hipBLASLt's one-row fp16 GEMMs on an MI300X (rocm-libraries PR
//     #12329; testdata/kernels/amd-hipblaslt-m1.tsv): 0.52 of the 5.3
//     TB/s at 90 MB of weights, 0.58–0.63 at 130–240 MB, 0.69 at 270 MB
//     and 0.72–0.79 from 470 MB to 2 GB. A step of more rows than the
//     skinny GEMMs take reads each of a layer's GEMMs, and the 16-bit
//     lm_head, at its size's rate (log-interpolated, the smallest shape's
//     rate held below 90 MB [assumption: smaller reads are no faster], the same
//     fraction of the MI325X's 6 TB/s [assumption: same die]); the
//     skinny GEMMs keep MBU 0.75, which vLLM's own wvSplitK reached on
//     Llama-3.1-405B's TP 8 MLP weights on an MI300 (PR #29937: 13312 ×
//     16384 in 0.110 ms, 16384 × 6656 in 0.0555 ms: 0.746 and 0.742).
//     Qwen3-8B's layer then reads 1.31× as long as at 0.75, Llama-3.1-
//     405B's at TP 8 1.15×. AMD's timings are of a 2026 hipBLASLt, so
//     they bound from above what the 2024 releases got [inferred]. Check:
//     PR #15830 timed Llama 3.1 70B at TP 8 (32 in, 128 out, one and two
//     prompts) at 1.412 and 1.446 s without the skinny GEMMs; sim, as the
//     release before them, gives 1.411 and 1.414 s (1.20 s with the old
//     flat 0.75); with them 1.289 and 1.344 s, sim 1.198 and 1.202 s
//     (vllm's TestROCmSkinnyGEMMAgainstPR15830; its GPU is not named
//     [assumption: MI300X]).
//     Routed experts (fused MoE) and ExLlama's GPTQ/AWQ keep MBU 0.75.
//
// EfficiencyScale (GPU.Scale) multiplies the compute and bandwidth
// efficiencies: it is what `servebench calibrate` fits.
//
// Links (per-direction effective bandwidth, per-message latency; a ring
// all-reduce among t GPUs costs 2(t−1) messages and sends 2(t−1)/t of the
// data from each GPU):
//
//   - nvlink: 450 GB/s, 2 µs. H100 NVLink 4 is 900 GB/s bidirectional,
//     450 per direction; capped by the GPU's own NVLink rate (A100 300
//     GB/s). nccl-tests#212 (sjeaugey): 8×H100 all-reduce peaks at a bus
//     bandwidth of ~480 GB/s with NVLink SHARP (370 GB/s ring). vLLM's
//     custom all-reduce makes small collectives a few µs.
//   - pcie (alias pcie-p2p): 25 GB/s, 8 µs. PCIe 4.0 x16 moves ~21–25 GB/s
//     in practice (the P2pNccl doc measures 21 GB/s host spill); NCCL over
//     PCIe P2P costs ~10–20 µs per small collective. The bandwidth is the
//     GPU's PCIe rate (GPU.PCIeBandwidth: 25 GB/s on PCIe 4.0 parts, 50 on
//     PCIe 5.0 H100, H200, B200): Vidur measured 4 GPUs in NVLink pairs,
//     whose ring crosses PCIe P2P, at 4268 µs (A100) and 2063 µs (H100)
//     for a 64 MiB all-reduce (data/profiling/network/*_pairwise_nvlink);
//     this model gives 4.07 and 2.06 ms.
//   - infiniband: 40 GB/s, 5 µs. NDR 400 Gb/s is 50 GB/s line rate; NCCL
//     with GPUDirect RDMA reaches ~80% of it (llm-d-inference-sim uses 40
//     GB/s for IB NDR) with a few µs per message.
//   - ethernet: 10 GB/s, 60 µs. 100 GbE effective rate as in
//     llm-d-inference-sim (real ≈ 60–80% of line rate). Without GPUDirect,
//     NCCL's socket transport stages every message through host memory and
//     a proxy thread on top of kernel TCP (~10–25 µs one way), so a
//     two-rank all-reduce takes ~120 µs [inferred].
//
// These four are servebench's original single-link presets, kept as they
// were. The transport presets of the collective model (collective.go):
//
//   - pcie-host (alias shm): GPUs without P2P, through host memory (NCCL
//     SHM), the default link of GPUs without NVLink (cloud PCIe instances
//     such as AWS g5/g6 expose no peer-to-peer; nm-vllm's A10G TP 4
//     prefill, below, needs the host path's bandwidth): 6 GB/s, 11 µs for
//     a point-to-point send; TP collectives inside one node take the
//     measured L40S tables below instead. tinygrad/open-gpu-kernel-modules#17: 2×RTX 4090
//     with P2P disabled, alltoall of 8 B in 11.6 µs; NCCL#1817: 8×L20 over
//     SHM, average bus bandwidth 6.13 GB/s; NCCL#384: 3.9 GB/s on PCIe 3.
//   - ib-200g, ib-400g: 24 and 48 GB/s per NIC, 10 µs. nccl-tests#252: 2
//     nodes × 4 H100 with 4 HDR 200 Gb NICs, NCCL_ALGO=RING, 1 GiB in 20.1
//     ms, bus bandwidth 93–97 GB/s, "~24GB/s per NIC" (AddyLaddy, NVIDIA);
//     400 Gb doubles it [inferred]. nccl-tests#150: 2 nodes × 1 A100 on
//     HDR InfiniBand, all-reduce of 8 B in 19.9 µs (two messages).
//   - roce-100g, roce-200g, roce-400g: 12, 24, 48 GB/s per NIC, 15 µs.
//     NVIDIA/dgx-spark-playbooks#103: all_reduce_perf between 2 nodes (one
//     GB10 each) over 200 Gb RoCE, 16 KiB in 31.7 µs, 8 KiB in 30.3 µs.
//     NCCL reports RoCE as NET/IB.
//   - socket-10g, socket-25g, socket-100g (NET/Socket, no RDMA): 1.1, 1.9
//     and 7.5 GB/s, 45 µs per message, one NIC per node. nccl-tests#82:
//     broadcast of 8 B between 2 nodes with NCCL_IB_DISABLE=1 in 45.8 µs;
//     NCCL#209: NCCL over TCP reaches at most ~60% of wire speed on 32 Gb/s
//     and faster networks (25 GbE → 1.9 GB/s, 100 GbE → 7.5 GB/s);
//     10 GbE single-stream TCP runs near line rate (1.1 GB/s) [inferred].
//     nccl-tests#284 shows the log lines ("via NET/Socket/0").
//
// TestCollectiveMatchesNCCLTests checks each figure within 15%. Users
// override any term: "--link name:bandwidth=…,latency=…,algo=…,nics=…";
// an overridden link always uses this parametric model.
//
// Measured collectives (kernels.go, tableCollectives): a TP group inside
// one node takes its all-reduce and logits all-gather from kernel tables
// instead, by message size at its rank count (interpolated in log ranks
// between 2, 4 and 8, held above 8). Over NVLink: the GPU's (or its
// origin's, below) nccl-tests tables, and vLLM's custom all-reduce table
// for messages up to its 8 MiB max_size on 2, 4, 6 or 8 ranks, as vLLM
// picks. Checked against Vidur's own NCCL measurements on DGX A100 and
// H100 (TestCollectivesMatchVidur): within 12% at ≥ 32 MiB, where
// Vidur's medians are not noise. Over pcie-host: the L40S node's
// nccl-tests tables (aiconfigurator): bus bandwidth 20 GB/s at 2 ranks,
// 5 at 4 and 1.45 at 8, the pattern of NCCL's SHM transport sharing host
// memory [inferred: P2P rings do not slow down with more ranks]. nm-vllm's
// A10G × 4 (g5.12xlarge) prefill of 2048 tokens took 0.494 s at TP 4 and
// 0.517 s at TP 1 (validate corpus nm-vllm-nightly-2024-03), so TP 4 cost
// 0.364 s over a perfect split; the model gives 0.330 s
// (TestPCIeTensorParallelPrefill). A different machine, 8 L20 over SHM
// (NCCL#1817), averaged 6.13 GB/s at 8 ranks: host topologies differ,
// and --link pcie-host:bandwidth=… switches to the parametric model.
//
// Collective model (Collective): a communicator of n ranks over N nodes.
// Ring all-reduce: 2(n−1) steps, each as slow as its slowest hop (the
// network when N > 1), each rank sending 2(n−1)/n of the message. Tree:
// a chain inside each node and a binary tree between nodes (NCCL's double
// binary tree), 2·((n/N−1)·α_intra + ⌈log2 N⌉·α_inter) of latency and
// twice the message per rank. Auto takes the cheaper, as NCCL's tuner
// does: inside one node the chain is never cheaper than the ring; across
// nodes tree wins for small messages (decode) and ring for large
// (prefill). Between nodes NCCL spreads channels over the node's NICs, so
// the network's bus bandwidth is NICs × the per-NIC rate (one NIC per GPU
// for IB/RoCE unless nics= says otherwise; one for sockets), capped by the
// intra-node link. All-gather (and vLLM's logits gather) is a ring of n−1
// steps; a pipeline send is one message.
//
// Input broadcasts (Deployment.StepInputBroadcasts): vLLM V0's driver
// broadcasts each step's model input to the rest of its TP group, one NCCL
// broadcast per GPU tensor (package vllm counts nine), before the forward
// pass can start, on every step. Each costs one collective of a few
// hundred bytes: the all-gather table's smallest message (512 B) at the
// group's ranks where the tables cover the link, 5.4 / 7.2 / 10.4 µs on
// 2 / 4 / 8 H100s and 9.0 / 10.8 / 14.6 µs on A100s, else the collective
// model's n−1 latencies [assumption: aiconfigurator's nccl-tests sweeps
// hold no broadcast, and NCCL's ring broadcast of a small message takes
// as many hops as its all-gather]. It is GPU time in the step's
// communication share, on every pipeline stage. The workers' wait for
// the metadata through the shared-memory queue is host time, package
// vllm's (shmReaderWait, where the queue's readers slept: 0.5.1–0.6.3);
// not modelled: their unpickling of it and their tensor allocations
// before they join the broadcast. validate: Lambda's
// TP 2–8 runs of vLLM 0.6.0 move most (H100 Llama-3-8B at TP 8, median
// ITL −20.0% → −17.0%); holdout medians in docs/fidelity.md.
//
// Placement (Placement): --nodes N puts TP·PP/N ranks on each node,
// global rank = PP stage·TP + TP rank, as vLLM fills Ray's placement group
// or --nnodes does. TP groups that fit in a node stay on it and only the
// PP boundaries between nodes cross the network; a TP group larger than a
// node spans TP/(GPUs per node) nodes and every all-reduce pays the
// network. Not modelled: NVLink SHARP and SHARP in-network reductions,
// PXN, several NICs per GPU, and congestion from other jobs.
//
// Swap copies use the GPU's PCIe rate (25 GB/s; 50 GB/s for PCIe 5.0 H100
// and H200).
//
// # Kernel tables (kerneltables.go, kernels.go)
//
// Catalog GPUs time a step's GPU work from measured kernel latencies, not
// from the roofline. tools/kernel-tables reduces two public databases to
// the embedded tables in kerneltables/ (≈300 KB; each file's header names
// its source commit, file, selection and cleaning; kerneltables/NOTICE
// carries the licenses):
//
//   - aiconfigurator (github.com/ai-dynamo/aiconfigurator @095f58a5,
//     Apache-2.0), vLLM backend, for H100-SXM, H200, A100-80GB, L40S and
//     B200: GEMM latency by (M, N, K) at M = 1…8192 (18 points) and N, K =
//     256…16384 plus 65536 (11 points), bf16 from vLLM 0.14.0's sweep
//     (B200 0.19.0) and fp8 from vLLM 0.24.0's CUTLASS scaled_mm sweep
//     (0.14.0's unnamed fp8 sweep runs slower than its bf16 one);
//     prefill attention (vllm_flash_attn; B200 flashinfer) by prompt
//     length 16…16384, batch 1…256 and query heads 1…64 at head dim 128
//     and a GQA group of 4 (8 at 64 heads), with the median fp8-KV/bf16-KV
//     ratio; decode attention by context 2…131072, batch 1…2048 and KV
//     heads 1…8 (4 query heads each); nccl-tests all_reduce and
//     all_gather, and vLLM's custom all-reduce replayed from a CUDA graph,
//     at 2, 4 and 8 ranks and 512 B…512 MiB; vLLM's fused MoE kernel
//     (Fused MoE, below) on H100-SXM, H200 and B200.
//   - Vidur (github.com/microsoft/vidur @7d475133, MIT): A40 linear-
//     operator times of six models at every TP, reduced to a GEMM table by
//     (M, N·K) (each sample scaled to its power-of-two N·K bin, time ∝ N·K
//     at a fixed M; a cell is the median). Vidur's A100/H100 operator and
//     collective times are test figures (testdata/kernels): the
//     aiconfigurator GEMM tables predict the linear operators of Vidur's
//     six models at every TP size (1,512 at M ≥ 64) with a median error
//     of 12.4% (TestGEMMTablesMatchVidur), an error that is a bias where
//     compute decides (In-model GEMMs, below).
//   - This project's own H100 SXM and H200 (tools/gpu-profile,
//     2026-11-27; testdata/gpu-profile) are a check, and a source only of
//     fa2OverFA3 (FlashAttention 2 before vLLM 0.7, above): cuBLAS
//     bf16 GEMMs, PyTorch's FlashAttention (and cuBLAS batched products
//     for decode) and whole decoder layers with random weights. The GEMM
//     tables are within 3.8–7.7% (median per M band) of them; prefill
//     attention from 1K tokens is 0.62–0.63× (FlashAttention 3 against 2);
//     decode attention 0.96× (H100) and 0.99× (H200) of the faster
//     reference; the step model's layer is 0–39% under PyTorch's unfused
//     one (median 0.87–0.90 at prefill, 0.75–0.83 at decode;
//     TestImportedGEMMTablesMatchProfiles,
//     TestImportedAttentionTablesMatchProfiles,
//     TestStepModelLayerMatchesProfiles). One rank's slice of
//     Llama-3.1-70B at TP 4 and of Meta's FP8 405B at TP 8 (all-reduces
//     left out; testdata/gpu-profile/h100-sxm-2026-11-27-tp) is 18–30%
//     under PyTorch's at decode once the FP8 layer's unfused per-token
//     quantization, measured on its own, is taken out
//     (TestStepModelShardedLayerMatchesProfile): a TP slice's kernels
//     are no worse timed than a whole layer's. What one GPU cannot show
//     is the all-reduces in a real step, where every rank waits for the
//     slowest; the custom all-reduce table is replayed from a CUDA graph
//     with the ranks in step [open: TP>1 H100 runs decode 12–30% slower
//     than sim, TP 1 within ±6%; vLLM 0.15.1's TP 2 and TP 4 runs finish
//     10–24% sooner than sim (docs/fidelity.md, "vLLM 0.15.1's
//     tensor-parallel decode runs at the weights' floor")].
//
// Cleaning: a monotone envelope. A kernel given at least as much work in
// every dimension never finishes sooner, so a cell slower than a larger
// problem's takes that time (clock and power swings; each header counts
// the cells changed). Unmeasured cells ("-": prefill batches past the
// collector's memory, the largest GEMMs at M ≤ 16) take their nearest
// measured neighbour along batch (or K, or bytes) scaled by the ratio.
//
// Interpolation rule: multilinear in the logarithms of the coordinates and
// of the time, exact for power laws and so between the grids' power-of-two
// (or 1.5×) points; below the first grid value the first is held (a
// kernel is no faster than its smallest launch), past the last the time
// grows in proportion on work axes (M, N, K, batch, bytes, context, heads)
// and is held on the rank axis. Held-back test
// (TestKernelTablesReproduceHeldBackPoints): every interior grid point in
// turn is predicted from its neighbours along each axis of five or more
// points; the median error is 1.4–3.9% per table and seven points in ten
// are within 10% in every table; p90 is 7–17% (L40S decode attention 40%)
// and the worst points 13–117%: neighbouring cells that differ by more
// than any smooth curve allows, mostly on the power-capped L40S.
//
// What a step runs (Model.attentionGEMMs and kernelPlan): per layer QKV
// and O (MLA: q_a/q_b or q, kv_a, kv_b, o), gate/up and down (MoE layers:
// router and shared experts as GEMMs, the routed experts as vLLM's fused
// MoE kernel, below); the lm_head over the sampled rows, always as a 16-bit
// GEMM, as is the router (vLLM's FP8 and compressed-tensors methods
// quantize linear layers only, GPTQ and AWQ-Marlin the lm_head only with
// "lm_head": true in the checkpoint's config, which sim does not read; the
// MoE models build their gate unquantized). The per-layer sums are built once per
// deployment as curves over the M grid, so a step reads each with one
// log-log interpolation. Prefill attention: the step's prefill pairs as n
// prompts of the length whose causal pairs average as many keys per query
// (2·pairs/tokens, held at 16384), scaled to the pairs; decode attention:
// the decodes at their mean context (StepShape.DecodeContext). Heads enter
// in head-dim-128 units (prefill: FLOPs per pair / (4·128); decode: KV
// elements per token / (2·128)), so MLA and other head dims scale.
// The decode tables stop at 8 KV heads per GPU; past that (Llama-2-7B's
// 32, Qwen1.5-MoE's 16) the extra heads fold into the batch: b sequences
// with h heads cost what b·h/8 do with 8 (decodeAt). The kernel splits
// its work into (sequence, KV head) units, and on every table the 8-head
// column follows from the 4-head one that way within 0.7–3.1% (median;
// scaling the time by the heads instead misses by 19–31%, because it
// multiplies the small-batch latency floor: TestDecodeTablesFoldHeadsIntoBatch).
// Decodes beside prompt tokens (KernelPolicy.V1UnifiedAttention,
// unpackedDecodeGroups): the decode tables time decode-only calls, in
// which FlashAttention 2 packs a KV head's query heads into one unit: its
// mha_varlen_fwd swaps them into the sequence axis only when max_seqlen_q
// is 1 (vllm-project/flash-attention at ee4d25bd, the commit vLLM 0.11.0
// builds; the same at the March–April 2025 pins and at its 2026 head).
// vLLM V1's FlashAttention backend runs a step's prompt tokens and decodes
// in one varlen call, so in a step that holds prompt tokens nothing is
// swapped: each (decode, query head) is a thread block of the split-KV
// kernel (grid: query blocks of 64 rows × sequences × query heads)
// streaming its KV head's cache alone, and the next query head of the
// group comes a whole sweep of the batch later, too late to find those
// bytes in L2 [inferred from the launch order]. The same cost is why
// vLLM's V1 FlashInfer backend splits decodes from prompts (PR #16684:
// "performance issues ... due to using BatchPrefillWithPagedKVCacheWrapper
// for all prefill and decode tokens"). sim times such a step's
// decodes as the decode table at g times as many, g the query heads per
// KV head on one GPU (Qwen2-7B 7, Qwen3-14B 5, Qwen3-235B-A22B at TP 8
// 8): the cache read g times, each block's 64-row tile of compute as in
// the packed call. Only where FlashAttention 2 runs: the A100's and
// L40S's tables and every part derived from them, and Hopper before
// FlashAttention 3 (FlashAttention 3 packs the heads of variable-length
// queries too: its should_pack_gqa returns true for them); V0 calls its
// decodes apart from its prompts. Not modelled: the tail of a long
// decode that no split shortens, models with a sliding window or ALiBi
// (FlashAttention 2 packs their decodes in no call), Blackwell (vLLM's
// backend there is not established; the B200 table is FlashInfer's).
// validate's A100 runs on V1 (17, all on the A100-80GB or -40GB) moved
// most: the A100 cell's TPOT/ITL median from 11.4% to 6.9%, throughput
// from 9.8% to 8.3%, TTFT from 15.3% to 13.7% (docs/fidelity.md);
// vLLM issue #20469's Qwen3-14B-AWQ at 25 streams of 16,000-token
// prompts, mean TPOT 323 ms published, from −28% to −8%
// (vllm-issue-20469/a100-qwen3-14b-awq-random16000-200-c25).
// The small kernels around them (RMSNorms, rotary embedding, SiLU-and-
// mul) come from Vidur's measurements (Per-layer kernels, below); the new
// tokens' KV writes keep the roofline's bandwidth term. Weight-only
// kernels (W4A16 GPTQ/AWQ, W8A16 FP8 Marlin) have no table: the bf16
// time's compute share (the roofline's share on the GPU) runs at the
// kernel's prefill factor, its memory share reads the narrower weights at
// the kernel's attained bandwidth (Efficiency tables, above). FP8 W8A8 uses the fp8 table.
// A block-wise FP8 checkpoint (128×128 weight scales: DeepSeek-V3/R1,
// Qwen3's -FP8 releases) is W8A8 too, but from 0.7.1 to 0.10.x vLLM runs
// its linear layers on Hopper through its own CUTLASS blockwise kernel
// (KernelPolicy.BlockFP8CUTLASS; vllm/kernels.go cites the PRs). vLLM's
// DeepGEMM benchmark README (an H100 80GB HBM3, 2025-02-26;
// testdata/kernels/vllm-block-fp8-h100.tsv) times that kernel, with its
// activations quantized beforehand, at 1.40–1.60× the H100-SXM fp8
// table's time (which includes its dynamic quantization) over the 11
// shapes clear of Python's dispatch floor, M = 8 to 4,096 with 4,096 to
// 18,432 outputs: weight-bound and compute-bound alike. So those layers
// (attention projections, dense MLPs, shared experts; not the 16-bit
// router or lm_head, not the fused MoE, whose table measured block FP8
// itself) take blockFP8CUTLASSSlowdown, the median 1.56, times the table's
// time, on H100 and H200 tables and the parts derived from them
// (TestBlockFP8CUTLASSMatchesVLLMBenchmark: each of the 11 within 12%).
// The measured MLA decode block keeps its excess over the per-tensor
// parts [assumption: it was measured under vLLM 0.24, whose DeepGEMM
// linears aiconfigurator times at the per-tensor rate at large M], and a
// CUTLASS release's projections add their own extra through the linear
// curve; that curve also charges kv_b's extra at decode rows, which
// absorbed MLA does not run there (0.2–0.3 ms of a 40 ms DeepSeek-R1
// step on 8 × H200) [approximation]. The kv_a projection (576 outputs,
// not a multiple of 128) ran vLLM's Triton block kernel in those
// releases, slower still; it takes the same factor [approximation]. sim
// --deep-gemm on|off (vllm.Options.DeepGEMM) overrides the release's
// choice; off from 0.11.0 stands for upstream CUTLASS's blockwise kernel
// (vLLM PR #23280), which that PR's H100 figures put at 1.5–2.0× the table
// at N = 2,112, K = 7,168 from M = 256 [approximation: the same 1.56].
// Blackwell's and Ada's block kernels are not measured and keep the fp8
// table [open].
// KernelSource adds "; block-FP8 linears: vLLM CUTLASS blockwise, 1.56×
// per-tensor".
// EfficiencyScale (calibrate's fit) divides each kernel time's roofline
// compute share by Compute and its memory share by Bandwidth.
//
// # In-model GEMMs
//
// aiconfigurator timed each GEMM on its own, in a loop; Vidur timed the
// same cuBLAS GEMMs inside each model's layer, between its other kernels.
// Where compute decides (roofline compute share ≥ 0.8) the table's time is
// 0.876 (A100, 395 operators) and 0.863 (H100, 212) of Vidur's, median.
// Where the weight read decides (share ≤ 0.2) it is 1.013 (A100, 504) and
// 0.949 (H100, 588): the H100 reads its weights about 5% slower inside a
// layer, and more so as M grows (0.957 below M = 16, 0.941 from 16 to 63,
// 0.929 from 64 up), so it is not the host gap of Vidur's eager timings,
// which would weigh on the smallest M most. So a table's GEMM time has its
// compute share divided by inModelComputeRate, 0.87, and its memory share
// by its GPU's inModelWeightRate, those two medians, fp8 tables of the
// same GPU included [assumption: Vidur timed 16-bit GEMMs; the weight
// read is the same die's] (gemmTimer.at;
// TestInModelComputeRateMatchesVidur recomputes all four from
// testdata/kernels/vidur-gemm.tsv). The weight rate stays 1 for the tables
// of GPUs Vidur did not measure (H200, L40S, B200): the two measured dies
// differ, so neither carries to a third [open]; GPUs derived from the
// H100's or A100's tables (H100-PCIe, H100-NVL, H20) take their origin's. This project's own
// H100 and H200 profiles point the same way: their GEMMs timed on their
// own take 1.00–1.06× the table's times (median per M band), yet the
// model's prefill layer came to only 0.80 and 0.82 of their measured
// whole layers (median) before the factor, 0.87 and 0.90 with it, and
// PyTorch's unfused norms, rotary and SiLU and its FlashAttention 2
// (against vLLM's 3) account for the rest. One compute
// rate serves every aiconfigurator table, fp8 and the GPUs Vidur did not
// measure (H200, L40S, B200) included [inferred: the A100 and H100 agree
// within 1.5%, so the gap is the measuring, not the die]. Vidur's own A40
// table is in-model already and keeps its times. The fused MoE and
// attention tables are timed as imported [open: no in-model measurement
// of them].
//
// Against the published runs (servebench validate, holdout; before →
// after): throughput 17% → 16%, TPOT/ITL 32% → 31%, TTFT 47% → 44%, E2E
// 12% → 12%. On the fit runs throughput and TPOT/ITL improve (23% →
// 20%, 25% → 21%) and TTFT and E2E move the other way (26% → 28%, 26% →
// 31%): the inference-sim-training low-load runs (vLLM 0.15.1), whose
// TTFT sim already over-predicts by 16–44%, gain 2–7 points.
//
// GPUs without a table of their own (kernelOrigin) take the nearest
// measured one of their architecture: A10, A10G and A40 GEMMs from A40
// and their attention from A100-80GB (Ampere); L4, L40 and RTX-4090 from
// L40S (Ada); H20, H100-PCIe and H100-NVL from H100-SXM (Hopper);
// A100-40GB and the A100 PCIe cards from A100-80GB. Each time is scaled
// by deriveScale: its roofline compute share by the ratio of dense peaks
// (SM count × boost clock × rate per SM, the data sheets' figures in the
// catalog: A40 84 SMs at 1740 MHz, 149.7 TF, 696 GB/s; A10 72 SMs at 1695
// MHz, 125 TF; A10G 80 SMs at half the A10's rate per SM, 70 TF; L4 58
// SMs at 2040 MHz; L40S 142 SMs at 2520 MHz; RTX 4090 128 SMs at 2520 MHz
// at half the L40S's rate per SM with FP32 accumulate; H20 78 SMs, 148
// TF; H100 NVL 835.5 TF at 3.9 TB/s), its memory share by the
// bandwidths. Where both parts have a measured matmul rate the compute
// share also takes the ratio of the fractions of their BF16 peaks those
// rates reach (measuredComputeRatio; FP8 GEMMs take the same fractions
// [assumption]): one script's best BF16 square matmul (torch.mm, 1,024 to
// 10,240, zzc0721/torch-performance-test-data's database.md at 9d82827,
// kerneltables/matmul-rates.tsv) reached 70.89 TFLOP/s on an L4 (0.59 of
// its 121 TF; a 72 W card) and 269.15 on an L40S (0.74 of 362), so the
// L4's compute runs at 0.79 of what the peaks give; H100-SXM (790.6, two
// submissions), A100-80GB (264.5) and B200 (1,696) land within 3.5% of
// the MAMF fractions above (TestMatmulRatesAgreeWithMAMF). The rates that
// reach a derivation: L4 and RTX-4090 (166.6, four submissions: 1.36 times
// the peaks' rate, above its data sheet's boost) from the L40S, H20 (142.1:
// 1.20 times) and H100-PCIe (495.9: 0.82 times) from H100-SXM,
// A100-40GB-PCIe (234.1: 0.89 times) from A100-80GB; fused-MoE times
// derived from H100-SXM's table take the same correction (A100-80GB 1.06
// times, L40S 0.93). L40, A10, A10G, A40, H100-NVL and A100-40GB have no
// rate and keep the peaks. Attention keeps its launch floor: the
// table's smallest problem's time (12.5 µs for the A100's decode kernel at
// 8 KV heads) stays and only the time above it scales (aboveFloor;
// TestDerivedAttentionKeepsLaunchFloor), since a launch takes no longer
// for the bandwidth an A10G lacks; reading the table at a stretched batch,
// as the per-layer kernels do, would walk along the source's L2 knees
// (the L40S's 96 MB holds a small batch's KV cache). The GEMM tables
// scale whole: the A40's smallest GEMV is within 1.7× of its weight read.
// MI300X (and any GPU not in the map, or
// a GPU YAML file) has no table and keeps the roofline. Roofline.
// KernelSource says which ("measured: H100-SXM", "derived from A40
// (attention: A100-80GB)", "roofline: no table"; MoE models add the
// fused-MoE table, "; fused MoE: H200 fp8-block 7168x2048x8x256"); sim's
// engine section prints it.
//
// # Per-layer kernels (elementwise.go)
//
// Besides its GEMMs and attention, each layer runs small kernels whose
// time the roofline's activation traffic (every tensor written once at
// MBU) put near zero at decode sizes. Vidur profiled them as vLLM's own
// ops (CUDA kernel time of each op, torch profiler, median of its
// repetitions; data/profiling/compute/{h100,a100,a40}/*/mlp.csv, six
// models, every TP size): input_layernorm and post_attention_layernorm
// (rmsnorm), attn_rope and mlp_act (silu_and_mul). tools/kernel-tables
// puts each op's samples on one axis, the elements the kernel touches
// (tokens × its width on one GPU: hidden for a norm, (H/t + max(H_kv/t,
// 1))·d_h for the rotary embedding of q and k, f/t for SiLU-and-mul),
// each scaled to its power-of-two bin, a cell the median
// (kerneltables/elementwise-*.txt). The floors on H100 are 4.7 µs
// (rmsnorm), 2.3 µs (rope) and 2.3 µs (silu_and_mul) up to ~0.5 M
// elements; from ~2 M elements they grow with the elements (rmsnorm 119
// µs at 33.5 M elements, 1.1 TB/s of its reads and writes). A step pays,
// per layer: two RMSNorms (vLLM fuses the residual add into them; MLA adds
// its q_a and kv_a norms at q_lora_rank and kv_lora_rank; Qwen3 and
// Qwen3-MoE, config model_type qwen3 or qwen3_moe, add Qwen3Attention's
// per-head q_norm and k_norm at H/t·d_h and max(H_kv/t, 1)·d_h), the rotary
// embedding (MLA: (H/t + 1)·qk_rope_head_dim), and SiLU-and-mul of a dense
// MLP or of the shared experts (a routed expert's is inside the fused MoE
// kernel). Llama-3-8B on H100 pays 14 µs a layer at one token, 0.44 ms a
// decode step. The reduction gives back Vidur's per-model measurements of
// Llama-2-7B (TP 1) and Llama-2-70B (TP 4) on all three GPUs with a
// median error of 11% (TestElementwiseTablesMatchVidur; the bins merge
// models). Other GPUs read the profile closest in memory system, Hopper
// and Blackwell H100's, the A100s A100's, GDDR parts (A10, A10G, L4, L40,
// L40S, RTX 4090) A40's [assumption: these ops are bandwidth- or launch-
// bound], on elements stretched by the ratio of bandwidths, so a kernel
// at its launch floor keeps it and a bandwidth-bound one scales with the
// bandwidth. Not counted: inter-kernel gaps inside CUDA graphs, the KV
// cache write kernel's own floor.
//
// # Sampler (sampler.go)
//
// Deployment.SamplerKernels is the GPU time of the release's sampler by
// sampled rows and vocabulary, measured on one GPU (package vllm sets it
// from vLLM's own sampler timed on an H100 SXM; its doc, "Sampler time").
// Between measured rows and vocabularies it is linear; past the last row
// count and outside the vocabularies it grows with the logits cells. Every
// step that samples adds it to the last stage's GPU time (Breakdown.GPU,
// StageSplit.Stage), on both the table-driven and the roofline path. Other
// GPUs run it on rows stretched by the ratio of bandwidths, as the
// element-wise kernels run on stretched elements. The zero value counts
// no sampler.
//
// # Fused MoE (fusedmoe.go)
//
// vLLM runs all routed experts of a MoE layer as one kernel: the Triton
// fused_moe (16-bit, per-tensor FP8 and block-wise FP8 weights) or
// Marlin's MoE kernel (4-bit GPTQ/AWQ), which groups the tokens by expert
// and reads each touched expert once. Its time comes from aiconfigurator's
// measurements of vLLM's own kernel (moe_perf.parquet, vLLM 0.14.0 on
// H100-SXM and H200, 0.19.0 on B200; kerneltables/moe-*.txt) at the
// expert shapes of published models (hidden × width × top-k × experts:
// 2048×768×8×128 Qwen3-30B-A3B, 4096×1536×8×128 Qwen3-235B-A22B,
// 4096×14336×2×8 Mixtral-8x7B, 6144×16384×2×8 Mixtral-8x22B,
// 7168×2048×8×256 DeepSeek-V3/R1, 7168×2048×8×384 Kimi-K2 and others),
// uniform ("balanced") routing, by tokens in the step (1…16384) and TP
// size (1, 2, 4, 8; the sweep's unmeasured TP sizes of a shape take the
// nearest measured one scaled by the ratio of sizes, since each rank
// holds 1/t of every expert). Held back along tokens, each table
// reproduces its interior points with a median error of 0.6–4.1% (the
// sweep has a step near 32–48 tokens where Triton changes tile
// configuration). The weight format picks the table: block-wise FP8
// checkpoints (quantization_config.weight_block_size, DeepSeek-V3's 128)
// fp8-block, other FP8 fp8, 4-bit GPTQ/AWQ int4, the rest bf16; a GPU
// without FP8 units reads bf16. A model the sweep did not cover takes the
// nearest shape (the same share of experts per token k/E first, then the
// expert size h·f) scaled by the work per token, h·f·k, against the
// measured shape's [approximation: it sets the FLOPs and, while tokens
// reach experts of their own, the weights read]. Expert parallelism
// (--enable-expert-parallel: each GPU runs E/t whole experts on every
// token, then the TP all-reduce sums them, as vLLM 0.8 does) reads
// aiconfigurator's EP sweep of the same kernel (moe_ep_size = t,
// moe_tp_size 1; kerneltables/moe-ep-*.txt): DeepSeek-R1's layer on
// 8 × H200 takes 2.96 ms at 8,192 tokens against 2.33 ms sliced 8 ways,
// and 0.407 against 0.398 ms at 64 (held back along tokens, the EP
// tables reproduce their interior points with a median error of
// 0.8–1.9%). 4-bit weights have no EP table (the Marlin EP sweep covers
// fewer shapes and misses its held-back points by over 10% for 3 in 10)
// and read the TP table [approximation: both give each GPU 1/t of the
// expert work]. Validate: vLLM 0.8.4's EP runs of DeepSeek-R1 on 8 ×
// H200 (10, holdout) gain 1–12 points on every family; sim's EP
// throughput at 30,000 in / 100 out falls 7% below its TP one, where
// the published runs show 21% [open]. Above TP 8 the time shrinks as
// 8/t. GPUs other than
// those three take H100-SXM's table through deriveScale, Hopper parts as
// their own architecture, Ampere and Ada across it [assumption: the
// Triton kernel reaches the same share of each GPU's roofline].
//
// Before these tables the routed experts were timed as one GEMM per
// touched expert from the GEMM tables; each small GEMM's launch floor
// (5–15 µs) times 256 experts and 58 layers made DeepSeek-R1's 64-sequence
// decode on 8 × H200 cost 207 ms of GPU time, against 29 ms here (0.398
// ms a layer measured at 64 tokens).
//
// # MLA decode module (mla.go)
//
// vLLM's MLA attention block in decode runs more than its parts in the
// tables above: the query's no-RoPE part and the output go through
// per-head matmuls with the absorbed kv_b weights, block-wise FP8
// projections quantize their activations per token group first, and the
// MLA decode kernel has its own costs. aiconfigurator measured the whole
// block (mla_generation_module, vLLM 0.24.0 on H100-SXM and H200; the
// mla-decode-*.txt tables) at DeepSeek-V3's widths (hidden 7168, q_lora
// 1536, kv_lora 512, head dims 128 + 64 and 128), by context (2 to
// 131072), sequences (1 to 1024) and query heads per GPU (1 to 128), for
// bf16 and block-FP8 projections and for a bf16 KV cache (the
// FLASH_ATTN_MLA kernel) or an fp8 one (FlashMLA); 0.19.0's collection,
// which names no kernel and sweeps 16, 32 and 128 heads, agrees within
// 1–2% (97.3 vs 96.2 µs at 4 sequences of 512 tokens, 16 heads, H200).
// A model with those widths (DeepSeek-V3, R1, Kimi-K2's attention) on
// those GPUs reads it at its heads per GPU: each decode step adds, per
// layer, the block's time less what the GEMM, decode-attention and small-
// kernel tables give the same rows (setMLADecode), so a decode-only step
// takes the measured block. The excess changes sign (the decode-attention
// table outgrows the block at long contexts: 2.0 against 1.1 ms at 64
// sequences of 60,000 tokens, H200), so block and parts are two tables on
// the block's grid, subtracted when read; log-space interpolation of the
// differences gave NaN past the sign change. With prompts in the step the
// projections run over all its tokens, as they do in vLLM, and the excess
// is the decode path's [approximation: the block's fixed costs are not
// split between prompt and decode rows]. At 4 sequences of 512 tokens on the H200 at
// 16 heads the block takes 97.3 µs where its parts give 65.6 µs; at 64
// sequences 123.2 µs against 75.8 µs. Held back along each axis, the
// tables reproduce their interior points with a median error of 1.7–2.3%
// (p90 5–6.4%). Not covered: prompts (aiconfigurator's
// mla_context_module is −9…+20% off the parts over the 1 to 128
// prompts of 128 to 8,192 tokens compared, +12% for one prompt of 256:
// prefill keeps the parts [open]), GPUs of other families (Blackwell
// runs other MLA kernels; B200 keeps the parts) and releases: the block
// is 0.24.0's, applied to every release that runs MLA [assumption].
// Hopper parts without a table of their own (H20, H100-PCIe, H100-NVL)
// read H100-SXM's as their other tables do, derived: the table's smallest
// cell (one sequence of two tokens at the GPU's heads) is the launch floor
// and stays, and the time above it scales by the block's roofline on the
// two parts (mlaWork: the projections' weights and FLOPs, at FP8's rate
// for block-FP8 ones, and per context token the latent KV read and each
// head's scores and values at BF16's) [assumption: the block reaches the
// same share of each part's roofline, as for the fused MoE]. On 8 × H20,
// DeepSeek-R1's block is 0.8–1.05× H100's at one sequence and 1.2–2×
// at 256 sequences of 4,096 tokens (TestMLADecodeDerivedForHopperParts);
// a 4-stream decode (512 in, 256 out) goes from 12.5 to 14.9 ms mean
// TPOT. No corpus run measures an H20 or PCIe H100 with MLA. Validate: DeepSeek-R1 on 8 × H200 with 4 streams (vLLM
// 0.11.0, holdout), mean TPOT −35% → −25%, output throughput +53% →
// +33%.
//
// Prompt chunks with context. vLLM caches only each token's latent, so a
// prefill chunk whose prompt already has tokens in the cache (its earlier
// chunks, or prefix-cache hits) gathers their latents and runs kv_b_proj
// over every one of them, in every layer, to rebuild the keys and values
// its new tokens attend to, then merges that attention with the chunk's
// own (MLACommonImpl._compute_prefill_context, V1's MLA from 0.8.0;
// vLLM walks the context in workspace-sized passes, one pass here). The
// step model charges that GEMM at the layer's own kv_b_proj shape
// through the linear timer (the release's block-FP8 kernel included) over
// Σc_i, the chunks' cached tokens (KVTokens less the new tokens and the
// decodes' share; stepKernels.mlaContext, TestMLAContextUpProjection).
// The gather and the concatenation of the rebuilt keys (about 10 KB a
// context token a layer at 16 heads) are left out [approximation: under
// a fifth of the GEMM's time at 24,576 context tokens]. DeepSeek-R1's
// 8,192-token chunk at 24,576 cached tokens on 8 × H200 gains 31 ms under
// vLLM 0.8.4.
//
// # Shared prefix blocks (Roofline.l2Served)
//
// Requests that hit the prefix cache hold the same physical KV blocks, and
// a decode step's attention reads each of them once per such request. The
// decode kernels split their work by sequence and KV head, so the readers
// of a shared block run side by side and find it in L2 after the first
// read; the measured decode tables (distinct contexts) and the roofline's
// KV term would read it from HBM every time. The engine counts, per step,
// the decodes' reads of blocks more than one running request holds,
// beyond each block's first reader (StepShape.SharedDecodeContext: the
// decodes' own cache hits, at most the holders beyond the first of the
// blocks shared now), and those blocks once (SharedPrefixTokens). While
// one layer's shared blocks on one rank fit the GPU's L2 those reads come
// off the step's HBM reads: decode attention is timed at the context that
// is left, the roofline reads fewer KV bytes; past the L2 the share that
// fits does [approximation: the whole L2, as if the stream of unshared
// KV through it evicted nothing that is read again].
//
// L2 sizes (GPU.L2Bytes): GA100 40 MB (A100 whitepaper: every A100-40GB/
// 80GB, SXM and PCIe), GA102 6 MB (Ampere GA102 whitepaper: A10, A10G,
// A40), AD102 96 MB on the L40S and L40 and 72 MB on the RTX 4090, AD104
// 48 MB on the L4 (Ada Lovelace architecture whitepaper), GH100 50 MB on
// the H100 SXM5 and PCIe (H100 whitepaper); the H100 NVL and H200 take
// the SXM part's 50 MB [inferred: the same GH100 configuration]. The H20,
// B200, MI300X and MI325X have none recorded here, so nothing is read from
// their L2 [open]. A GPU from a YAML file gets its l2_mib, none without it.
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
// embeddings and lm_head stay 16-bit (Qwen2.5-7B GPTQ-Int4: 5.57 GB). The
// attention blocks and dense MLPs of layers a checkpoint's
// quantization_config.modules_to_not_convert covers stay 16-bit too, and
// their GEMMs run on the BF16 tables: Meta's FP8 Llama-3.1-405B
// (fbgemm_fp8, read as fp8) keeps all attention and the first and last
// layers' MLPs in BF16, 56.71 GiB per GPU at TP 8 against the 56.77 vLLM
// logged on dstack's 8×H100 (47.74 if every layer were FP8).
//
// Activation peak = max_num_batched_tokens · 2 B · (3·f/t + 4·d) + min(
// max_num_seqs, max_num_batched_tokens) · V · 4 B: the SwiGLU gate/up output
// and product plus hidden-sized buffers of the dummy batch, and fp32 logits
// of the dummy sampler run (the larger of the two; package vllm replaces
// the 4 B with its release's sampler peak, Deployment.SamplerPeak, measured
// on a GPU by rows). In a MoE model's MoE layers the gate/up term is vLLM's
// fused MoE caches instead (fused_experts_impl, read from the code):
// min(M, 32,768) · k · (max(N, d) + N/2) elements for top-k experts whose
// gate/up width on a rank is N (2·I/t, or 2·I under expert parallelism),
// the first and last caches sharing one buffer since PR #13625 (vLLM 0.8.0;
// before, N + d + N/2: Deployment.FusedMoESeparateCaches). It equals the
// 3·f/t term for experts wider than the hidden size (Mixtral: N = 14,336
// at TP 2 against d = 4,096) and exceeds it for fine-grained ones
// (DeepSeek-V3 at TP 8: 7,424 elements per token and routed expert against
// 864), whose cache3 rows are hidden-wide; the dense layers and shared
// experts keep 3·width/t. The formula brackets vLLM's logs: Llama-3-8B
// shows 1.26 GiB at 8192 tokens on H100 (vLLM 0.6.5, PR #10511; this
// formula 1.03 GiB), and 2.07 GiB at 20000 tokens on an RTX 3090 (vLLM
// 0.6.3, issue #10517; this formula 2.33 GiB).
//
// Non-torch memory (CUDA context, cuBLAS/attention workspaces) is 1.25 GiB
// on one GPU and 3.0 GiB with more than one (NCCL and custom all-reduce
// buffers): vLLM measured 0.35 GiB on a 3090 (0.6.3 accounting) and 1.79
// GiB on an H100 (0.6.5), which doubled to 3.58 GiB at TP=2. A vLLM
// release replaces both with what its own profile counts (package vllm,
// MemoryAccounting: from 0.7, 0.16 GiB on one GPU and 0.60 GiB on each of
// several, from published KV cache sizes).
//
// NVLink SHARP buffers (Deployment.NVLSBytes). On GPUs whose node joins
// them through NVLink switches that multicast (GPU.NVLinkSHARP: H100 SXM,
// H200, H20, B200; not A100, PCIe cards or NVLink-bridged pairs), NCCL
// turns NVLS on for communicators of more than two local ranks and sets
// aside buffers for it at communicator creation, before vLLM's profile
// run, which counts them as non-torch memory. Their size is NCCL 2.21's
// log line, quoted in vLLM issue #9699 (8×H200): "nHeads 8 buffSize
// 4194304 memSize 2097152 nvlsPerRankSize 301989888 nvlsTotalSize
// 2415919104", 288 MiB per rank of the communicator on every GPU, 2.25 GiB
// at 8 ranks and 1.125 GiB at 4. Deployment.NVLSCommunicators says how many
// communicators over the TP group a release counts (package vllm); the
// ranks are the TP group's on one node. The same issue measured the whole
// effect in vLLM: Llama-3.1-405B at TP 8 on 8×H200 (max_num_seqs 1024,
// 1024 batched tokens) printed 17,595 GPU blocks with NVLS and a count
// beginning "227…" with NCCL_NVLS_ENABLE=0 (the copy we could read is cut
// there): about 5,100 blocks, 4.9–5.0 GiB, which two 8-rank communicators
// (4.5 GiB) explain and one (2.25 GiB) does not [inferred: the measured
// total, not its split between communicators, is what is modelled]. perf models that run at
// 20,680 blocks with the buffers and 25,361 without; with the sampler's
// peak measured on a GPU (package vllm's doc) 19,914: still +13.2% of the
// blocks (1.8% of the budget) at max_num_seqs 1024, a gap that dstack's
// 256-sequence runs (package vllm's doc) do not show [unexplained].
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
// MoE and MLA. Memory holds every expert: total linear parameters =
// L·attention + dense layers·3·d·f + MoE layers·(d·E router + 3·d·f_shared
// + E·3·d·f_e). Compute per token uses the active parameters (router,
// shared experts and k routed experts). A step of n tokens reads, in each
// MoE layer, the experts its tokens were routed to: E·(1−(1−k/E)^n)
// expected distinct experts under uniform routing, so one decode streams
// k/E of the expert weights and a batch of 64 on Mixtral all of them
// (Roofline.touchedExperts). With ExpertParallel (EP size = TP) each GPU
// holds ceil(E/t) whole experts instead of 1/t of every expert. MLA caches
// kv_lora_rank + qk_rope_head_dim elements per token and layer, which
// every TP rank holds whole (Mixtral: 128 KiB a token; DeepSeek-V2-Lite:
// 30.4 KiB); attention FLOPs per pair use the decompressed heads
// (2·H·(qk_nope + qk_rope + v_head)), or 4·H·(qk_nope + qk_rope) where
// vLLM pads V to the query/key width for a FlashAttention that takes one
// head dim: every GPU but Hopper on FlashAttention 3 and Blackwell on
// V1's FlashInfer prefill, Hopper too before 0.8.5 (PR #13111) and
// Blackwell before 0.10.0 (PR #20034; Deployment.mlaPadsV,
// KernelPolicy.MLAPadVOnFA3 and MLAFlashInferPrefill), 1.2× the FLOPs on
// DeepSeek-V3's 192/128. Releases before vLLM supported MLA
// (package vllm sets MLA.Expanded: V0 before 0.7.1, V1 before 0.8.0) ran
// the layer as ordinary attention over the decompressed heads, with q, k
// and v padded to 256: the cache holds K and V of H/t heads at 256 per
// token and layer, split across ranks (DeepSeek-V2-Lite: 432 KiB a token,
// 14× MLA's; PR #10927 printed 5,373 GPU blocks of 16 tokens in 35.42 GiB
// for it on an H100, which that size gives: TestExpandedMLAKVBytes), and
// attention takes 4·H·256 FLOPs a pair and writes q, k, v and its output
// at H·256 each (activation traffic, below). The fused-MoE activation peak is
// taken as k·3·f_e + 3·f_shared wide. Worked numbers: Mixtral-8x7B weighs
// 86.99 GiB (93,405,577,216 bytes, the checkpoint's safetensors size) and
// 43.50 GiB per GPU at TP=2; on 2×H100 at 0.9 with V1 defaults that
// leaves 23.7 GiB of KV cache, 387,888 tokens. Checked against a vLLM log
// (issue #21348, a 0.9-era V1 build): Qwen3-235B-A22B-FP8 on 4×H100 printed
// "Available KV cache memory: 8.11 GiB" and "GPU KV cache size: 178,880
// tokens"; here 12.20 GiB and 272,224 tokens. The KV bytes per token agree
// (22,056 vs 22,313 tokens per GiB); the 4.1 GiB gap is memory outside the
// KV cache that this model does not see [deviation: the FP8 checkpoint's
// bf16 router/lm_head and block scales, and newer vLLM's CUDA-graph
// reservation before sizing the cache].
//
// A deployment whose weights plus the CUDA runtime exceed a GPU fails with
// ReasonWeightsExceedGPU (vLLM dies with CUDA out of memory while loading,
// and its cache error would advise raising gpu_memory_utilization), naming
// SmallestFittingTP: the smallest tensor_parallel_size with which
// Capacity succeeds (Llama-3.1-70B on H100: 4 at its 131072 tokens, 2 at
// 8192). gpu_memory_utilization outside (0, 1] fails with one text for
// every case. AllowLongMaxModelLen is VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.
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
// tensor written once: 2 B·(6·d + (2H + 2H_kv)·d_h/t + 3·f/t). For MLA
// the attention part is (H·(2·(qk_nope + qk_rope) + 2·v_head) + kv_lora +
// qk_rope)/t, and (4·H·256 + kv_lora + qk_rope)/t when expanded
// (DeepSeek-V2-Lite: 10,816 and 16,960 elements a token and layer).
//
// Communication, added to the GPU time (vLLM does not overlap it):
// 2 all-reduces per layer plus one for the embedding, each of T·d·2 bytes
// (a ring inside a node; across nodes ring or tree by size, above); a gather of S·V·2 bytes of logits; with PP, one send of hidden
// state and residual (2·T·d·2 bytes) per stage boundary, over the network
// where the boundary crosses nodes. StepTime is one
// batch's latency through every stage; StageSplit and StageTime give the
// busiest stage's share, which the drivers use to keep one batch per stage
// in flight (vLLM's virtual engines and V1 batch queue, pipeline.go).
//
// Swap: each swapped block costs its bytes over PCIe plus 2 µs for each of
// the 2·layers cudaMemcpyAsync calls vLLM issues per block.
//
// CPU overhead per step: V1 0.4 ms + 2 µs per scheduled sequence; V0
// 1.0 ms + 10 µs per sequence (V0 schedules, prepares inputs, samples and
// detokenizes in one Python process between forward passes; V1 overlaps
// much of it). A step that runs without a CUDA graph waits for its
// kernels' launches (Breakdown.LaunchGaps, GPU idle time that a host
// model keeps when it replaces the CPU overhead): all steps with
// EnforceEager; otherwise every V0 step with prompt tokens, V0 steps of
// more than 256 decodes (0.5.x; from 0.6.0 more than max_num_seqs padded
// to a multiple of 8, Deployment.V0GraphsUpToMaxSeqs) or with a sequence
// longer than max_seq_len_to_capture (Deployment.MaxSeqLenToCapture, 8192
// by default and capped at max_model_len, as V0's model runner checks
// before replaying a graph), and V1 steps over 512 tokens (from vLLM
// 0.10.0 over min(2 × max_num_seqs, 512), truncated to a captured size:
// Deployment.V1GraphsByMaxSeqs).
//
//   - V0, and V1 under EnforceEager: the driver launches each layer's
//     kernels from Python, 350 µs a layer, and the GPU, when its work is
//     shorter, waits for them: such a step lasts max(GPU work, layers ·
//     350 µs) on every stage. V1's --enforce-eager turns torch.compile off
//     too (VllmConfig leaves the compilation level at NO_COMPILATION
//     unless one is given, from V1's first releases through 0.11), so its
//     steps run the same eager PyTorch as V0's [inferred: the per-layer
//     cost is V0's measurement]. The
//     constant is read from vLLM PR #1440 (2023-10): Llama-2-7B decoding
//     at batch 1 on one GPU, 5 prompt and 100 generated tokens, took 1.2
//     s eager and 1.05 s from CUDA graphs. Eager is launch-bound (it is
//     slower), so the 12.0 ms a token eager is the launches plus the host
//     work that the graphed 10.5 ms also holds, 10.5 ms less the GPU's
//     9.7 ms here on an A100-80GB [assumed: the PR names no GPU]: 11.2 ms
//     for 32 layers. TestEagerStepsWaitForLaunches gives the PR's two
//     figures back within 10%. A prompt of a few hundred tokens on a fast
//     GPU is such a step (Llama-3-8B on an H100: 137 tokens take 7.6 ms
//     of GPU work, 11.2 ms of launches; from about 400 tokens the GPU
//     outlasts them). The launches are CPU work: a HostStepModel counts
//     a step they decide as host-bound and scales them by --host-speed
//     on every pipeline stage (Roofline.WithLaunchSpeed); TP does not
//     change them (each rank launches its own) [approximation].
//     Before, sim took prompts to outlast their launches [inferred, now
//     replaced]; validate's holdout TTFT median moved from 27.1% to
//     21.6% (docs/fidelity.md).
//   - V1 without EnforceEager: decode steps past the captured sizes add
//     25 µs of launch gaps per layer [unmeasured]; prompts add none (V1's
//     piecewise-compiled model launches far fewer kernels from Python
//     [inferred]). Before, sim charged --enforce-eager's V1 steps the
//     same; vLLM issue #20469's eager Qwen3-14B-AWQ runs showed the gap
//     (concurrency 1: TPOT 20.6 ms published, 9.8 simulated), and
//     vLLM's config code the cause. BLIS fits
//     the same shape (β5·layers + β6·batch + β7).
//   - V1 steps it replays (Breakdown.GraphGaps): V1's piecewise CUDA
//     graphs leave each layer's attention out, so it runs eagerly from
//     Python between two graphs and the GPU idles 14 µs a layer
//     (piecewiseGapPerLayer): vLLM PR #20059 (Qwen2.5-1.5B-Instruct, 28
//     layers, ShareGPT at 1 request/s) decoded at a median ITL of 5.39 ms
//     on piecewise graphs and 4.97–5.03 ms on full ones, and PR #10058's
//     Llama-3.1-8B latency benchmark took 1.04 s on V1's piecewise graphs
//     against 0.99 s on V0's full ones (128 steps of 32 layers, 12 µs a
//     layer). From 0.11.0 (cudagraph_mode FULL_AND_PIECEWISE, PR #25444;
//     Deployment.V1FullDecodeGraphs) a step of decodes alone replays one
//     full graph and pays none; a step with prompt tokens still replays
//     the piecewise ones. The gap is a cost of the GPU's, not a host-bound
//     step's. Not on ROCm: on an MI300X, vLLM PR #15830's Llama-3.1-70B
//     latency under 0.8.4 is within 5% without it [open]; nor is the
//     larger gain PR #25444 measured for fine-grained MoE models (Qwen3-
//     Coder-30B-A3B-FP8 on an H100: 4.07 → 5.98 requests/s) modelled
//     [open].
//
// A step that replays a graph runs the batch it was captured for: vLLM
// pads the tokens up to the next captured size, 1, 2, 4 and then
// multiples of 8 (V0's
// _BATCH_SIZES_TO_CAPTURE and cuda_graph_pad_size, read at v0.5.4 and
// v0.6.1.post2; V1's pad_for_cudagraph over [1, 2, 4] + range(8, 513, 8)
// in the 0.8.5-era tree; later V1 releases step by 16 from 256 tokens
// [not modelled]). The padding rows cost GEMM, small-kernel and
// collective work (graphRows); attention, KV writes, the lm_head and
// the sampler see only the real rows.
//
// The roofline times GPUs without kernel tables (above); with tables,
// the GPU time per stage is the sum of the measured kernels rather than
// max(compute, memory), and Breakdown reports it as Compute.
//
// Not modelled: kernel-level effects beyond the tables (the tables carry
// tile quantisation and one attention kernel per GPU), L2 reuse, prefix-cache copy-on-
// write, speculative decoding, skewed expert routing and expert-parallel
// all-to-all traffic (EP's memory and its MoE kernel times are modelled,
// with the TP all-reduce; not DP+EP's all-to-all), MLA's replicated
// down-projections and its absorbed decode kernels, LoRA, sliding windows
// (Gemma-2 and Mistral-7B-v0.1 attend locally in some layers), sampling
// parameters other than greedy (top-k, top-p, penalties),
// overlap of communication with compute, uneven layer splits between stages, and GPU
// clocks or thermals. Calibrated replaces the roofline with a linear fit
// when measurements exist.
package perf
