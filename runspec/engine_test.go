package runspec

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
)

// isolateEnv keeps the user's Hugging Face cache and vLLM variables out of
// a test.
func isolateEnv(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	for _, k := range []string{"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "VLLM_ALLOW_LONG_MAX_MODEL_LEN"} {
		t.Setenv(k, "")
	}
	t.Setenv("HOME", home)
	return home
}

// testEnv is the environment the test set up.
func testEnv() Env {
	home, _ := os.UserHomeDir()
	return ReadEnv(os.LookupEnv, home)
}

// resolveArgs parses a sim command line and resolves its engine in an
// isolated environment.
func resolveArgs(t *testing.T, args ...string) (*Spec, *ResolvedEngine, error) {
	t.Helper()
	isolateEnv(t)
	return resolveInEnv(t, args...)
}

// resolveOrOneLineError resolves args and, where wantErr is set, requires
// the one-line error that contains it and returns nil.
func resolveOrOneLineError(t *testing.T, wantErr string, args ...string) *ResolvedEngine {
	t.Helper()
	_, r, err := resolveArgs(t, args...)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("error %v, want one line containing %q", err, wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// resolveInEnv parses a sim command line and resolves its engine in the
// environment the test set up.
func resolveInEnv(t *testing.T, args ...string) (*Spec, *ResolvedEngine, error) {
	t.Helper()
	s, err := Parse(Sim, args)
	if err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	s.Env = testEnv()
	r, err := s.Engine.Resolve(context.Background(), s.ChangedFunc(), s.Env)
	return s, r, err
}

// buildInEnv resolves a sim command line's engine and returns its
// deployment and capacity.
func buildInEnv(t *testing.T, args ...string) (*Spec, perf.Deployment, perf.Capacity, error) {
	t.Helper()
	s, r, err := resolveInEnv(t, args...)
	if err != nil {
		return s, perf.Deployment{}, perf.Capacity{}, err
	}
	return s, r.Deployment, r.Capacity, nil
}

// TestEngineFlagErrors: invalid combinations fail with vLLM's own text
// (argparse choices, CacheConfig, ModelConfig, SchedulerConfig, the memory
// profile), checked in vLLM's order.
func TestEngineFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // exact, or a prefix when it ends with "…"
	}{
		{"engine choice", []string{"--engine", "v2"}, "argument --engine: invalid choice: 'v2' (choose from 'v0', 'v1')"},
		{"v0 block size", []string{"--engine", "v0", "--block-size", "64"}, "argument --block-size: invalid choice: 64 (choose from 8, 16, 32)"},
		{"v1 block size", []string{"--block-size", "12"}, "argument --block-size: invalid choice: 12 (choose from 8, 16, 32, 64, 128)"},
		{"kv cache dtype", []string{"--kv-cache-dtype", "int8"}, "argument --kv-cache-dtype: invalid choice: 'int8' (choose from 'auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2')"},
		{"gpu memory utilization above 1", []string{"--gpu-memory-utilization", "1.5"}, "--gpu-memory-utilization 1.5: GPU memory utilization must be greater than 0 and at most 1.0; vLLM's default is 0.9"},
		{"gpu memory utilization 0", []string{"--gpu-memory-utilization", "0"}, "--gpu-memory-utilization 0: GPU memory utilization must be greater than 0 and at most 1.0; vLLM's default is 0.9"},
		{"gpu memory utilization negative", []string{"--gpu-memory-utilization", "-0.2"}, "--gpu-memory-utilization -0.2: GPU memory utilization must be greater than 0 and at most 1.0; vLLM's default is 0.9"},
		{"tensor parallel heads", []string{"--model", "Qwen2-7B", "-tp", "3"}, "Total number of attention heads (28) must be divisible by tensor parallel size (3)."},
		{"max model len", []string{"--model", "Qwen2.5-7B-Instruct", "--max-model-len", "200000"},
			"User-specified max_model_len (200000) is greater than the derived max_model_len (max_position_embeddings=32768 or model_max_length=None in model's config.json). This may lead to incorrect model outputs or CUDA errors. To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"},
		{"v0 batched tokens below max_model_len", []string{"--engine", "v0", "--max-model-len", "4096", "--max-num-batched-tokens", "2048"},
			"max_num_batched_tokens (2048) is smaller than max_model_len (4096). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len."},
		{"batched tokens below max_num_seqs", []string{"--max-num-batched-tokens", "100", "--max-num-seqs", "256"},
			"max_num_batched_tokens (100) must be greater than or equal to max_num_seqs (256)."},
		{"v1 swap", []string{"--preemption-mode", "swap"}, "preemption_mode=swap requires --engine v0: vLLM's V1 engine only preempts by recompute and falls back to V0 when --preemption-mode is set"},
		{"weights exceed the GPU", []string{"--model", "Llama-3-70B", "--gpu", "A100-80GB"},
			"Model weights need 131.41 GiB per GPU, more than one A100-80GB holds (79.15 GiB, of which 1.25 GiB go to the CUDA runtime); raising gpu_memory_utilization cannot help. Use -tp 4, the smallest tensor parallel size that fits at --max-model-len 8192, or a quantized checkpoint"},
		{"Llama-3.1-70B on one H100", []string{"--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100"},
			"Model weights need 131.41 GiB per GPU, more than one H100-SXM holds (79.11 GiB, of which 1.25 GiB go to the CUDA runtime); raising gpu_memory_utilization cannot help. Use -tp 4, the smallest tensor parallel size that fits at --max-model-len 131072, or a quantized checkpoint"},
		{"Llama-3.1-70B at 8K on one H100", []string{"--model", "Llama-3.1-70B", "--max-model-len", "8192", "--gpu-memory-utilization", "0.95"},
			"Model weights need 131.41 GiB per GPU, more than one H100-SXM holds (79.11 GiB, of which 1.25 GiB go to the CUDA runtime); raising gpu_memory_utilization cannot help. Use -tp 2, the smallest tensor parallel size that fits at --max-model-len 8192, or a quantized checkpoint"},
		{"no memory", []string{"--model", "Qwen2-7B", "--gpu-memory-utilization", "0.2"}, "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."},
		{"preemption mode choice", []string{"--engine", "v0", "--preemption-mode", "recomputation"}, "argument --preemption-mode: invalid choice: 'recomputation' (choose from 'recompute', 'swap')"},
		{"zero max-num-seqs", []string{"--max-num-seqs", "0"}, "--max-num-seqs 0: must be at least 1; leave it unset for vLLM's default"},
		{"zero max-num-batched-tokens", []string{"--max-num-batched-tokens", "0"}, "--max-num-batched-tokens 0: must be at least 1; leave it unset for vLLM's default"},
		{"expert parallel on a dense model", []string{"--enable-expert-parallel"}, "Expert parallelism needs a mixture-of-experts model; Qwen2.5-7B-Instruct is dense. Turn enable_expert_parallel off."},
		{"v0 max seq len over the cache", []string{"--engine", "v0", "--model", "Llama-3.1-8B", "--gpu", "L4"},
			"The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (…"},
		{"v1 max seq len over the cache", []string{"--model", "Llama-3.1-8B", "--gpu", "L4"},
			"To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (…"},
		{"unknown model", []string{"--model", "gpt-5"}, `--model: perf: unknown model "gpt-5"; known models: …`},
		{"uncached Hugging Face id", []string{"--model", "acme/Nonexistent-7B"}, `--model: perf: unknown model "acme/Nonexistent-7B": not a catalog model (…`},
		{"missing GPU file", []string{"--gpu", "/nonexistent/h100.yaml"}, "GPU file /nonexistent/h100.yaml: no such file; pass a catalog GPU name (…"},
		{"negative max-num-seqs", []string{"--max-num-seqs", "-1"}, "--max-num-seqs -1: must be at least 1; leave it unset for vLLM's default"},
		{"awq on an unquantized checkpoint", []string{"--quantization", "awq"},
			"--quantization: awq needs a checkpoint quantized with it (a quantization_config in its config.json); Qwen2.5-7B-Instruct is unquantized, and only fp8 quantizes an unquantized checkpoint as it loads"},
		{"quantization against the checkpoint's", []string{"--model", "Qwen2.5-7B-Instruct-GPTQ-Int4", "-q", "fp8"},
			"--quantization: quantization method specified in the model config (gptq) does not match the quantization method specified in the `quantization` argument (fp8)"},
		{"unknown quantization", []string{"-q", "bitsandbytes"}, "--quantization: bitsandbytes is not a quantization servebench models: use fp8 (on the fly), or a gptq, awq or fp8 checkpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := resolveArgs(t, tc.args...)
			if err == nil {
				t.Fatalf("%q accepted", tc.args)
			}
			if prefix, ok := strings.CutSuffix(tc.want, "…"); ok {
				if !strings.HasPrefix(err.Error(), prefix) {
					t.Errorf("error\n got %q\nwant prefix %q", err, prefix)
				}
			} else if err.Error() != tc.want {
				t.Errorf("error\n got %q\nwant %q", err, tc.want)
			}
		})
	}
}

// TestEngineFlagDefaults: vLLM's defaults per engine version and GPU.
func TestEngineFlagDefaults(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, ec engine.Config)
	}{
		{"v1 on H100", nil, func(t *testing.T, ec engine.Config) {
			if ec.Version != engine.V1 || ec.MaxNumSeqs != 1024 || ec.MaxNumBatchedTokens != 8192 || !ec.EnableChunkedPrefill ||
				!ec.EnablePrefixCaching || ec.NumCPUBlocks != 0 || ec.Watermark != 0 || ec.MaxModelLen != 32768 || ec.BlockSize != 16 {
				t.Errorf("%+v", ec)
			}
		}},
		{"v1 on L4", []string{"--model", "Qwen2-0.5B-Instruct", "--gpu", "L4"}, func(t *testing.T, ec engine.Config) {
			if ec.MaxNumSeqs != 256 || ec.MaxNumBatchedTokens != 2048 {
				t.Errorf("%+v", ec)
			}
		}},
		{"v0", []string{"--engine", "v0"}, func(t *testing.T, ec engine.Config) {
			if ec.Version != engine.V0 || ec.MaxNumSeqs != 256 || ec.MaxNumBatchedTokens != 32768 || ec.EnableChunkedPrefill ||
				ec.EnablePrefixCaching || ec.NumCPUBlocks == 0 || ec.Watermark != 0.01 || ec.PreemptionMode != "" {
				t.Errorf("%+v", ec)
			}
		}},
		{"v0 long context chunks", []string{"--engine", "v0", "--model", "Qwen2-7B"}, func(t *testing.T, ec engine.Config) {
			if !ec.EnableChunkedPrefill || ec.MaxNumBatchedTokens != 512 || ec.MaxModelLen != 131072 {
				t.Errorf("%+v", ec)
			}
		}},
		{"v0 chunked on request", []string{"--engine", "v0", "--enable-chunked-prefill"}, func(t *testing.T, ec engine.Config) {
			if !ec.EnableChunkedPrefill || ec.MaxNumBatchedTokens != 512 {
				t.Errorf("%+v", ec)
			}
		}},
		{"v0 prefix caching and swap", []string{"--engine", "v0", "--enable-prefix-caching", "--preemption-mode", "swap", "--scheduler-delay-factor", "0.5", "--legacy-requeue-order"},
			func(t *testing.T, ec engine.Config) {
				if !ec.EnablePrefixCaching || ec.PreemptionMode != engine.PreemptSwap || ec.SchedulerDelayFactor != 0.5 || !ec.LegacyRequeueOrder {
					t.Errorf("%+v", ec)
				}
			}},
		{"recompute", []string{"--engine", "v0", "--preemption-mode", "recompute"}, func(t *testing.T, ec engine.Config) {
			if ec.PreemptionMode != engine.PreemptRecompute {
				t.Errorf("%+v", ec)
			}
		}},
		{"v1 without prefix caching", []string{"--no-enable-prefix-caching"}, func(t *testing.T, ec engine.Config) {
			if ec.EnablePrefixCaching {
				t.Errorf("%+v", ec)
			}
		}},
		{"explicit limits", []string{"--max-model-len", "8192", "--max-num-seqs", "64", "--max-num-batched-tokens", "4096", "--block-size", "32"},
			func(t *testing.T, ec engine.Config) {
				if ec.MaxModelLen != 8192 || ec.MaxNumSeqs != 64 || ec.MaxNumBatchedTokens != 4096 || ec.BlockSize != 32 {
					t.Errorf("%+v", ec)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, r, err := resolveArgs(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			d, capacity, ec, model := r.Deployment, r.Capacity, r.Engine, r.StepModel
			if model == nil || ec.NumGPUBlocks != capacity.GPUBlocks || ec.NumGPUBlocks <= 0 || d.MaxModelLen != ec.MaxModelLen {
				t.Fatalf("deployment %+v capacity %+v engine %+v", d, capacity, ec)
			}
			if err := ec.Validate(); err != nil {
				t.Fatal(err)
			}
			tc.check(t, ec)
		})
	}
}

func TestVLLMArgs(t *testing.T) {
	got := VLLMArgs([]string{"-tp", "2", "-pp=2", "--model", "x", "--", "-tp"})
	want := []string{"--tp", "2", "--pp=2", "--model", "x", "--", "-tp"}
	if !slices.Equal(got, want) {
		t.Errorf("VLLMArgs = %q, want %q", got, want)
	}
	s, _, err := resolveArgs(t, "--model", "Qwen2-7B", "-tp", "2")
	if err != nil || s.Engine.TensorParallel != 2 {
		t.Errorf("-tp 2: tensor parallel %d, %v", s.Engine.TensorParallel, err)
	}
}

// The error vLLM prints for a long --max-model-len tells the user to set
// VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; doing so must work.
func TestAllowLongMaxModelLenEnv(t *testing.T) {
	tests := []struct {
		env     string
		wantErr string // prefix; "" means accepted
	}{
		{"", "User-specified max_model_len (16384) is greater than the derived max_model_len"},
		{"0", "User-specified max_model_len (16384) is greater than the derived max_model_len"},
		{"1", ""},
		{"true", ""},
		{"yes please", `VLLM_ALLOW_LONG_MAX_MODEL_LEN="yes please": set it to 1`},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			isolateEnv(t)
			t.Setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", tt.env)
			_, d, _, err := buildInEnv(t, "--model", "Llama-3-8B", "--max-model-len", "16384")
			switch {
			case tt.wantErr == "" && (err != nil || d.MaxModelLen != 16384):
				t.Errorf("max_model_len %d, error %v; want 16384 accepted", d.MaxModelLen, err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want prefix %q", err, tt.wantErr)
			}
		})
	}
}

// cacheModel puts config.json of id into a Hugging Face hub cache.
func cacheModel(t *testing.T, hub, id, configPath string) {
	t.Helper()
	data, err := os.ReadFile(configPath)
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(hub, "models--"+strings.ReplaceAll(id, "/", "--"))
	snap := filepath.Join(repo, "snapshots", "0123456789abcdef")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte("0123456789abcdef"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// --model given as a Hugging Face id reads the cached config.json (an MoE
// model unknown to the catalog by that id), from HF_HOME, HF_HUB_CACHE or
// ~/.cache/huggingface/hub; a miss names every place it looked.
func TestModelFromHFCache(t *testing.T) {
	const id = "acme/Tiny-Mixtral"
	config := filepath.Join("..", "perf", "testdata", "moe", "Mixtral-8x7B-v0.1", "config.json")
	tests := []struct {
		name  string
		setup func(t *testing.T, home string)
	}{
		{"HF_HOME", func(t *testing.T, home string) {
			t.Setenv("HF_HOME", filepath.Join(home, "hf"))
			cacheModel(t, filepath.Join(home, "hf", "hub"), id, config)
		}},
		{"HF_HUB_CACHE", func(t *testing.T, home string) {
			t.Setenv("HF_HUB_CACHE", filepath.Join(home, "hubcache"))
			cacheModel(t, filepath.Join(home, "hubcache"), id, config)
		}},
		{"default location", func(t *testing.T, home string) {
			cacheModel(t, filepath.Join(home, ".cache", "huggingface", "hub"), id, config)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := isolateEnv(t)
			tt.setup(t, home)
			_, d, c, err := buildInEnv(t, "--model", id, "-tp", "2", "--max-model-len", "8192")
			if err != nil {
				t.Fatal(err)
			}
			if d.Model.Name != "Tiny-Mixtral" || !d.Model.IsMoE() || d.Model.MoE.Experts != 8 {
				t.Fatalf("model %s %+v; want the cached Mixtral config", d.Model.Name, d.Model.MoE)
			}
			if want := d.Model.WeightBytes() / 2; c.WeightBytes < want-1 || c.WeightBytes > want+1 {
				t.Errorf("weights/GPU %d, want %d (all experts, split over 2 GPUs)", c.WeightBytes, want)
			}
		})
	}
	home := isolateEnv(t)
	t.Setenv("HF_HOME", filepath.Join(home, "hf"))
	_, _, _, err := buildInEnv(t, "--model", "acme/Missing-7B")
	if err == nil {
		t.Fatal("an uncached, unknown id was accepted")
	}
	for _, want := range []string{
		filepath.Join(home, "hf", "hub", "models--acme--Missing-7B", "snapshots", "*", "config.json"),
		filepath.Join(home, ".cache", "huggingface", "hub", "models--acme--Missing-7B", "snapshots", "*", "config.json"),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// --enable-expert-parallel places whole experts: 60 experts on 8 GPUs
// leave 8 on the busiest one, more than 60/8 slices.
func TestExpertParallelFlag(t *testing.T) {
	isolateEnv(t)
	args := []string{"--model", "Qwen1.5-MoE-A2.7B", "-tp", "8"}
	_, tp, ctp, err := buildInEnv(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	_, ep, cep, err := buildInEnv(t, append(args, "--enable-expert-parallel")...)
	if err != nil {
		t.Fatal(err)
	}
	if tp.ExpertParallel || !ep.ExpertParallel || cep.WeightBytes <= ctp.WeightBytes || cep.GPUBlocks >= ctp.GPUBlocks {
		t.Errorf("EP %v weights %d blocks %d; TP %v weights %d blocks %d", ep.ExpertParallel, cep.WeightBytes, cep.GPUBlocks, tp.ExpertParallel, ctp.WeightBytes, ctp.GPUBlocks)
	}
}

// TestQuantizationFlag: --quantization fp8 on an unquantized checkpoint
// stores its linear weights in one byte, as vLLM's on-the-fly FP8 does,
// which leaves more KV cache; naming the checkpoint's own method changes
// nothing.
func TestQuantizationFlag(t *testing.T) {
	isolateEnv(t)
	_, bf16, cbf16, err := buildInEnv(t, "--model", "Llama-3.1-8B")
	if err != nil {
		t.Fatal(err)
	}
	_, fp8, cfp8, err := buildInEnv(t, "--model", "Llama-3.1-8B", "--quantization", "fp8")
	if err != nil {
		t.Fatal(err)
	}
	if bf16.Model.Quantization.Method != "" || fp8.Model.Quantization.Method != "fp8" {
		t.Errorf("quantization %q and %q, want none and fp8", bf16.Model.Quantization.Method, fp8.Model.Quantization.Method)
	}
	// Llama-3.1-8B: 6.98 B linear weights, so about 6.5 GiB fewer bytes.
	if saved := float64(cbf16.WeightBytes-cfp8.WeightBytes) / (1 << 30); saved < 6 || saved > 7 || cfp8.GPUBlocks <= cbf16.GPUBlocks {
		t.Errorf("fp8 saves %.2f GiB of weights (want 6-7) and has %d blocks against %d", saved, cfp8.GPUBlocks, cbf16.GPUBlocks)
	}
	_, same, _, err := buildInEnv(t, "--model", "Qwen2.5-7B-Instruct-GPTQ-Int4", "--quantization", "gptq_marlin")
	if err != nil || same.Model.Quantization.Method != "gptq" || same.Model.Quantization.Bits != 4 {
		t.Errorf("gptq_marlin on a GPTQ checkpoint: %v, %+v", err, same.Model.Quantization)
	}
}

// --async-scheduling and --no-async-scheduling reach the host model, and
// the releases or combinations vLLM refuses fail with one line naming the
// flag.
func TestAsyncSchedulingFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    vllm.Overlap
		wantErr string
	}{
		{"0.14 default", []string{"--vllm-version", "0.15.1"}, vllm.OverlapAsyncScheduling, ""},
		{"turned off", []string{"--vllm-version", "0.15.1", "--no-async-scheduling"}, vllm.OverlapEngineCore, ""},
		{"turned on before the default", []string{"--vllm-version", "0.11.0", "--async-scheduling"}, vllm.OverlapAsyncScheduling, ""},
		{"both", []string{"--vllm-version", "0.15.1", "--async-scheduling", "--no-async-scheduling"}, "", "give one of them"},
		{"before the flag", []string{"--vllm-version", "0.9.2", "--async-scheduling"}, "", "--async-scheduling: vLLM 0.9.2 has no async scheduling; it arrived in 0.10.0"},
		{"V0", []string{"--vllm-version", "0.8.5", "--engine", "v0", "--no-async-scheduling"}, "", "needs the V1 engine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := resolveOrOneLineError(t, tc.wantErr, tc.args...)
			if r == nil {
				return
			}
			m, ok := r.StepModel.(*vllm.HostStepModel)
			if !ok || m.Host.Overlap != tc.want {
				t.Errorf("step model %T overlap %v, want %s", r.StepModel, m, tc.want)
			}
		})
	}
}

// --multi-step-stream-outputs reaches sim's config as given, the
// release's default when unset, and is refused before 0.6.2.
func TestMultiStepStreamFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    bool
		wantErr string
	}{
		{"0.6.3 default", []string{"--vllm-version", "0.6.3", "--num-scheduler-steps", "8"}, true, ""},
		{"0.6.3 turned off", []string{"--vllm-version", "0.6.3", "--num-scheduler-steps", "8", "--multi-step-stream-outputs=false"}, false, ""},
		{"0.6.2 turned on", []string{"--vllm-version", "0.6.2", "--num-scheduler-steps", "8", "--multi-step-stream-outputs"}, true, ""},
		{"before the flag", []string{"--vllm-version", "0.6.0", "--num-scheduler-steps", "8", "--multi-step-stream-outputs"}, false,
			"vLLM 0.6.0 has no multi-step output streaming; it arrived in 0.6.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := resolveOrOneLineError(t, tc.wantErr, tc.args...)
			if r == nil {
				return
			}
			if r.MultiStepStream != tc.want || !r.AsyncOutputLag {
				t.Errorf("MultiStepStream %v, AsyncOutputLag %v; want %v, true", r.MultiStepStream, r.AsyncOutputLag, tc.want)
			}
		})
	}
}

// TestQuantizationFlagPicksKernel: --quantization gptq on a GPTQ
// checkpoint runs vLLM's pre-Marlin kernel, gptq_marlin (and no flag)
// Marlin; a method the checkpoint does not carry is refused.
func TestQuantizationFlagPicksKernel(t *testing.T) {
	for _, tc := range []struct {
		flag        string
		wantExLlama bool
		wantErr     string
	}{
		{"", false, ""},
		{"gptq", true, ""},
		{"gptq_marlin", false, ""},
		{"awq", false, "--quantization: quantization method specified in the model config (gptq) does not match"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			args := []string{"--model", "Qwen2.5-7B-Instruct-GPTQ-Int4", "--gpu", "A10G", "--max-model-len", "4096"}
			if tc.flag != "" {
				args = append(args, "--quantization", tc.flag)
			}
			_, r, err := resolveArgs(t, args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Deployment.Kernels.GPTQExLlama; got != tc.wantExLlama {
				t.Errorf("GPTQ on ExLlamaV2 = %v, want %v", got, tc.wantExLlama)
			}
		})
	}
}

// TestModelIDPicksChatTemplate: --model as typed reaches the resolver, so
// vLLM 0.11.0's per-request template parse is the checkpoint's own: the
// catalog serves DeepSeek-R1-0528 and DeepSeek-V3 from one architecture,
// but only R1-0528's template was measured; Qwen3's 2507 Instruct
// template, shorter than Qwen3's, costs less.
func TestModelIDPicksChatTemplate(t *testing.T) {
	home := isolateEnv(t)
	// The 2507 Instruct checkpoint is not in the catalog: its config sits in
	// the hub cache, as a download leaves it.
	config, err := os.ReadFile("../validate/corpus/models/Qwen--Qwen3-235B-A22B-Instruct-2507/config.json")
	if err != nil {
		t.Fatal(err)
	}
	snapshot := filepath.Join(home, ".cache", "huggingface", "hub", "models--Qwen--Qwen3-235B-A22B-Instruct-2507", "snapshots", "0d0f7c1")
	if err := os.MkdirAll(snapshot, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snapshot, "config.json"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	prepare := func(model string) float64 {
		t.Helper()
		_, r, err := resolveInEnv(t, "--model", model, "--gpu", "H200", "-tp", "8", "--vllm-version", "0.11.0")
		if err != nil {
			t.Fatal(err)
		}
		return r.ChatPrepare.Seconds()
	}
	r1, v3 := prepare("deepseek-ai/DeepSeek-R1-0528"), prepare("deepseek-ai/DeepSeek-V3")
	if r1 != v3 {
		// V3's template is not measured, so it costs the reference's: R1-0528's.
		t.Errorf("DeepSeek-R1-0528 %v s, DeepSeek-V3 %v s: an unmeasured template costs the reference's", r1, v3)
	}
	qwen3, instruct := prepare("Qwen/Qwen3-235B-A22B"), prepare("Qwen/Qwen3-235B-A22B-Instruct-2507")
	if !(instruct < qwen3 && qwen3 < r1) {
		t.Errorf("chat preparation Qwen3-2507 Instruct %v s, Qwen3 %v s, DeepSeek-R1-0528 %v s: want increasing", instruct, qwen3, r1)
	}
}
