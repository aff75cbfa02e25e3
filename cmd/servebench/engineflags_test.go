package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine"
	"github.com/spf13/pflag"
)

func buildEngineFlags(t *testing.T, args ...string) (*engineFlags, error) {
	t.Helper()
	var f engineFlags
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse(vllmArgs(args)); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	_, _, _, _, err := f.build()
	return &f, err
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
		{"gpu memory utilization", []string{"--gpu-memory-utilization", "1.5"}, "GPU memory utilization must be less than 1.0. Got 1.5."},
		{"tensor parallel heads", []string{"--model", "Qwen2-7B", "-tp", "3"}, "Total number of attention heads (28) must be divisible by tensor parallel size (3)."},
		{"max model len", []string{"--model", "Qwen2.5-7B-Instruct", "--max-model-len", "200000"},
			"User-specified max_model_len (200000) is greater than the derived max_model_len (max_position_embeddings=32768 or model_max_length=None in model's config.json). This may lead to incorrect model outputs or CUDA errors. To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"},
		{"v0 batched tokens below max_model_len", []string{"--engine", "v0", "--max-model-len", "4096", "--max-num-batched-tokens", "2048"},
			"max_num_batched_tokens (2048) is smaller than max_model_len (4096). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len."},
		{"batched tokens below max_num_seqs", []string{"--max-num-batched-tokens", "100", "--max-num-seqs", "256"},
			"max_num_batched_tokens (100) must be greater than or equal to max_num_seqs (256)."},
		{"v1 swap", []string{"--preemption-mode", "swap"}, "preemption_mode=swap requires --engine v0: vLLM's V1 engine only preempts by recompute and falls back to V0 when --preemption-mode is set"},
		{"no memory", []string{"--model", "Llama-3-70B", "--gpu", "A100-80GB"}, "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."},
		{"v0 max seq len over the cache", []string{"--engine", "v0", "--model", "Llama-3.1-8B", "--gpu", "L4"},
			"The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (…"},
		{"v1 max seq len over the cache", []string{"--model", "Llama-3.1-8B", "--gpu", "L4"},
			"To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (…"},
		{"unknown model", []string{"--model", "gpt-5"}, `perf: unknown model "gpt-5"; known models: …`},
		{"missing GPU file", []string{"--gpu", "/nonexistent/h100.yaml"}, "GPU file /nonexistent/h100.yaml: no such file; pass a catalog GPU name (…"},
		{"negative max-num-seqs", []string{"--max-num-seqs", "-1"}, "--max-num-seqs (-1) must be positive, or left unset for vLLM's default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := buildEngineFlags(t, tc.args...)
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
		{"any other preemption mode is recompute", []string{"--engine", "v0", "--preemption-mode", "recomputation"}, func(t *testing.T, ec engine.Config) {
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
			var f engineFlags
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			f.register(fs)
			if err := fs.Parse(vllmArgs(tc.args)); err != nil {
				t.Fatal(err)
			}
			d, capacity, ec, model, err := f.build()
			if err != nil {
				t.Fatal(err)
			}
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
	got := vllmArgs([]string{"-tp", "2", "-pp=2", "--model", "x", "--", "-tp"})
	want := []string{"--tp", "2", "--pp=2", "--model", "x", "--", "-tp"}
	if !slices.Equal(got, want) {
		t.Errorf("vllmArgs = %q, want %q", got, want)
	}
	f, err := buildEngineFlags(t, "--model", "Qwen2-7B", "-tp", "2")
	if err != nil || f.tensorParallel != 2 {
		t.Errorf("-tp 2: tensor parallel %d, %v", f.tensorParallel, err)
	}
}
