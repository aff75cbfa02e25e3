package vllm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
)

func resolve(t testing.TB, version string, eng engine.Version, model, gpu string, o vllm.Options) (*vllm.Resolved, error) {
	t.Helper()
	p, err := vllm.Lookup(version, eng)
	if err != nil {
		t.Fatal(err)
	}
	m, err := perf.LookupModel(model)
	if err != nil {
		t.Fatal(err)
	}
	g, err := perf.LookupGPU(gpu)
	if err != nil {
		t.Fatal(err)
	}
	return vllm.Resolve(context.Background(), p, m, g, o)
}

// TestResolveDefaults: each release fills what the user left unset as
// that release does.
func TestResolveDefaults(t *testing.T) {
	on := true
	cases := []struct {
		name, version, model, gpu string
		o                         vllm.Options
		wantChunked, wantPrefix   bool
		wantSeqs, wantTokens      int
		wantLegacy                bool
	}{
		{"0.5.4 8K context: no chunking", "0.5.4", "Qwen2-7B", "H100", vllm.Options{MaxModelLen: 8192}, false, false, 256, 8192, true},
		{"0.5.4 at exactly 32K: no chunking", "0.5.4", "Qwen2-7B", "H100", vllm.Options{MaxModelLen: 32768}, false, false, 256, 32768, true},
		{"0.5.4 128K context chunks by itself", "0.5.4", "Llama-3.1-8B", "H100", vllm.Options{}, true, false, 256, 512, true},
		{"0.6.3 chunked on request", "0.6.3", "Qwen2-7B", "H100", vllm.Options{EnableChunkedPrefill: &on}, true, false, 256, 512, false},
		{"0.6.4 128K context: still 512", "0.6.4", "Llama-3.1-8B", "H100", vllm.Options{}, true, false, 256, 512, false},
		// PR #10544 (0.6.5): V0's chunked-prefill budget 512 -> 2048.
		{"0.6.5 128K context: 2048", "0.6.5", "Llama-3.1-8B", "H100", vllm.Options{}, true, false, 256, 2048, false},
		{"0.8.5 V1 on a large GPU", "0.8.5", "Qwen2-7B", "H100", vllm.Options{}, true, true, 1024, 8192, false},
		// PR #12369 until PR #17073 (0.8.5): the large values go by name, to
		// H100s and H200s only; before PR #16158 (0.8.4) every GPU takes
		// 1024 sequences.
		{"0.8.3 V1 on an 80 GB A100", "0.8.3", "Qwen2-7B", "A100-80GB", vllm.Options{}, true, true, 1024, 2048, false},
		{"0.8.4 V1 on an 80 GB A100", "0.8.4", "Qwen2-7B", "A100-80GB", vllm.Options{}, true, true, 256, 2048, false},
		{"0.8.4 V1 on an MI300X", "0.8.4", "Qwen2-7B", "MI300X", vllm.Options{}, true, true, 256, 2048, false},
		{"0.8.4 V1 on an H100 PCIe", "0.8.4", "Qwen2-7B", "H100-PCIe", vllm.Options{}, true, true, 1024, 8192, false},
		{"0.8.1 V1 on an H200", "0.8.1", "Qwen2-7B", "H200", vllm.Options{}, true, true, 1024, 8192, false},
		{"0.8.1 V1 on an L4", "0.8.1", "Qwen2-0.5B", "L4", vllm.Options{}, true, true, 1024, 2048, false},
		{"0.8.5 V1 on an MI300X", "0.8.5", "Qwen2-7B", "MI300X", vllm.Options{}, true, true, 1024, 8192, false},
		{"0.8.5 V1 on a 24 GiB GPU", "0.8.5", "Qwen2-0.5B", "RTX-4090", vllm.Options{}, true, true, 256, 2048, false},
		// PR #17885 (0.9.0): A100s keep the small values whatever their memory.
		{"0.8.5 V1 on an 80 GB A100", "0.8.5", "Qwen2-7B", "A100-80GB", vllm.Options{}, true, true, 1024, 8192, false},
		{"0.9.2 V1 on an 80 GB A100", "0.9.2", "Qwen2-7B", "A100-80GB", vllm.Options{}, true, true, 256, 2048, false},
		{"0.11.0 V1 on an 80 GB A100 PCIe", "0.11.0", "Qwen2-7B", "A100-80GB-PCIe", vllm.Options{}, true, true, 256, 2048, false},
		{"0.11.0 V1 on an H100", "0.11.0", "Qwen2-7B", "H100", vllm.Options{}, true, true, 1024, 8192, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := resolve(t, c.version, "", c.model, c.gpu, c.o)
			if err != nil {
				t.Fatal(err)
			}
			ec := r.Engine
			if ec.EnableChunkedPrefill != c.wantChunked || ec.EnablePrefixCaching != c.wantPrefix || ec.MaxNumSeqs != c.wantSeqs ||
				ec.MaxNumBatchedTokens != c.wantTokens || ec.LegacyRequeueOrder != c.wantLegacy {
				t.Errorf("got chunked %v prefix %v seqs %d tokens %d legacy %v", ec.EnableChunkedPrefill, ec.EnablePrefixCaching,
					ec.MaxNumSeqs, ec.MaxNumBatchedTokens, ec.LegacyRequeueOrder)
			}
			if _, ok := r.StepModel.(*vllm.HostStepModel); !ok {
				t.Errorf("step model %T, want the host-overhead model", r.StepModel)
			}
		})
	}
}

// TestResolveErrors: flags a release refuses, with vLLM's texts.
func TestResolveErrors(t *testing.T) {
	cases := []struct {
		name, version string
		eng           engine.Version
		o             vllm.Options
		want          string
		wantOption    string
	}{
		{"V0 block sizes", "0.6.3", "", vllm.Options{BlockSize: 64}, "argument --block-size: invalid choice: 64 (choose from 8, 16, 32)", ""},
		{"preemption mode", "0.5.4", "", vllm.Options{PreemptionMode: "recomputation"}, "argument --preemption-mode: invalid choice: 'recomputation' (choose from 'recompute', 'swap')", ""},
		{"V1 swap", "0.8.5", "", vllm.Options{PreemptionMode: "swap"}, "preemption_mode=swap requires engine v0", ""},
		{"V1 multi-step", "0.9.0", engine.V1, vllm.Options{NumSchedulerSteps: 8}, "num_scheduler_steps (8) needs the V0 engine", "num_scheduler_steps"},
		{"negative graph length", "0.6.4", "", vllm.Options{MaxSeqLenToCapture: -1}, "max_seq_len_to_capture (-1) must be at least 1", "max_seq_len_to_capture"},
		{"frontend multiprocessing before 0.5.4", "0.5.3", "", vllm.Options{DisableFrontendMultiprocessing: true},
			"vLLM 0.5.3 has no such flag, its OpenAI server always runs in the engine's process; the flag arrived in 0.5.4 (PR #6883)", "disable_frontend_multiprocessing"},
		{"async output before 0.6", "0.5.4", "", vllm.Options{DisableAsyncOutputProc: true}, "vLLM 0.5.4 has no async output processing; it arrived in 0.6.0 (PR #7049)", "disable_async_output_proc"},
		{"multi-step streaming before 0.6.2", "0.6.1", "", vllm.Options{NumSchedulerSteps: 8, MultiStepStreamOutputs: new(true)},
			"vLLM 0.6.1 has no multi-step output streaming; it arrived in 0.6.2 (PR #8335)", "multi_step_stream_outputs"},
		{"multi-step streaming on V1", "0.8.5", engine.V1, vllm.Options{MultiStepStreamOutputs: new(false)}, "multi_step_stream_outputs needs the V0 engine", "multi_step_stream_outputs"},
		{"async scheduling on V0", "0.8.5", engine.V0, vllm.Options{AsyncScheduling: new(true)}, "async scheduling needs the V1 engine", "async_scheduling"},
		{"async scheduling before 0.10", "0.9.2", "", vllm.Options{AsyncScheduling: new(false)}, "vLLM 0.9.2 has no async scheduling; it arrived in 0.10.0 (PR #19970)", "async_scheduling"},
		{"async scheduling with pipeline parallelism", "0.15.1", "", vllm.Options{AsyncScheduling: new(true), PipelineParallel: 2},
			"async scheduling does not support pipeline parallelism (pipeline_parallel_size 2)", "async_scheduling"},
		{"batched tokens below sequences", "0.6.3", "", vllm.Options{MaxNumSeqs: 256, MaxNumBatchedTokens: 128, EnableChunkedPrefill: new(true)},
			"max_num_batched_tokens (128) must be greater than or equal to max_num_seqs (256).", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := resolve(t, c.version, c.eng, "Qwen2-7B", "H100", c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			var oe *vllm.OptionError
			if got := ""; errors.As(err, &oe) {
				got = oe.Option
				if got != c.wantOption {
					t.Errorf("option %q, want %q", got, c.wantOption)
				}
			} else if c.wantOption != "" {
				t.Errorf("error %T names no option, want %q", err, c.wantOption)
			}
		})
	}
}

// The OpenAI server runs in its own process from 0.5.4 (PR #6883) unless
// --disable-frontend-multiprocessing keeps it in the engine's; V1 ignores
// the flag, as vLLM does.
func TestFrontendProcessByRelease(t *testing.T) {
	for _, c := range []struct {
		version string
		eng     engine.Version
		o       vllm.Options
		want    vllm.Overlap
	}{
		{"0.5.3", "", vllm.Options{}, vllm.OverlapNone},
		{"0.5.4", "", vllm.Options{}, vllm.OverlapSeparateAPI},
		{"0.5.4", "", vllm.Options{DisableFrontendMultiprocessing: true}, vllm.OverlapNone},
		{"0.6.2", "", vllm.Options{}, vllm.OverlapAsyncOutput},
		{"0.6.2", "", vllm.Options{DisableFrontendMultiprocessing: true}, vllm.OverlapAsyncOutputSharedAPI},
		{"0.6.2", "", vllm.Options{DisableFrontendMultiprocessing: true, DisableAsyncOutputProc: true}, vllm.OverlapNone},
		{"0.8.5", engine.V0, vllm.Options{DisableFrontendMultiprocessing: true}, vllm.OverlapAsyncOutputSharedAPI},
		{"0.8.5", engine.V1, vllm.Options{DisableFrontendMultiprocessing: true}, vllm.OverlapEngineCore},
	} {
		r, err := resolve(t, c.version, c.eng, "Qwen2-7B", "H100", c.o)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.StepModel.(*vllm.HostStepModel).Host.Overlap; got != c.want {
			t.Errorf("%s %s %+v: overlap %s, want %s", c.version, c.eng, c.o, got, c.want)
		}
		// Only V1 ignores the flag, and says so first at startup.
		lines := vllm.StartupLines(r)
		warned := len(lines) > 0 && lines[0].Warning && strings.Contains(lines[0].Text, "--disable-frontend-multiprocessing: ignored")
		if want := c.o.DisableFrontendMultiprocessing && r.Profile.Engine == engine.V1; warned != want {
			t.Errorf("%s %s %+v: startup lines %+v, want the ignored-flag warning %v", c.version, c.eng, c.o, lines, want)
		}
	}
}

// Async output processing (V0 0.6–0.10 unless disabled) delivers a step's
// outputs one step late (sim.Config.AsyncOutputLag).
func TestAsyncOutputLagByRelease(t *testing.T) {
	for _, c := range []struct {
		version string
		eng     engine.Version
		o       vllm.Options
		want    bool
	}{
		{"0.5.4", "", vllm.Options{}, false},
		{"0.6.0", "", vllm.Options{}, true},
		{"0.6.6", "", vllm.Options{DisableAsyncOutputProc: true}, false},
		{"0.8.5", engine.V0, vllm.Options{}, true},
		{"0.8.5", engine.V1, vllm.Options{}, false},
	} {
		r, err := resolve(t, c.version, c.eng, "Qwen2-7B", "H100", c.o)
		if err != nil {
			t.Fatal(err)
		}
		if r.AsyncOutputLag != c.want {
			t.Errorf("%s %s %+v: AsyncOutputLag %v, want %v", c.version, c.eng, c.o, r.AsyncOutputLag, c.want)
		}
	}
}

// Multi-step groups stream every step's tokens from 0.6.3 (PR #9047)
// unless --multi-step-stream-outputs=False; 0.6.2 has the flag, off.
func TestMultiStepStreamByRelease(t *testing.T) {
	for _, c := range []struct {
		version string
		o       vllm.Options
		want    bool
	}{
		{"0.6.0", vllm.Options{NumSchedulerSteps: 10}, false},
		{"0.6.2", vllm.Options{NumSchedulerSteps: 10}, false},
		{"0.6.2", vllm.Options{NumSchedulerSteps: 10, MultiStepStreamOutputs: new(true)}, true},
		{"0.6.3", vllm.Options{NumSchedulerSteps: 10}, true},
		{"0.6.6", vllm.Options{NumSchedulerSteps: 10, MultiStepStreamOutputs: new(false)}, false},
	} {
		r, err := resolve(t, c.version, "", "Qwen2-7B", "H100", c.o)
		if err != nil {
			t.Fatal(err)
		}
		if r.MultiStepStream != c.want {
			t.Errorf("%s %+v: MultiStepStream %v, want %v", c.version, c.o, r.MultiStepStream, c.want)
		}
	}
}

// The chat path's costs by release (chatprep.go): content-format
// detection on every request from 0.6.5 until PR #20065 cached it (0.9.2),
// the per-request template parse on 0.11.0 alone (a model whose template
// was not measured costs the fitted reference's; chatprep_test.go has the
// others), the fitted ingest latency on the 0.11 releases only (0.18.0's
// published chat runs rule it out), the base preparation after; a faster
// host divides them, and the offline LLM class calls no API.
func TestChatPrepareByRelease(t *testing.T) {
	const us = time.Microsecond
	for _, c := range []struct {
		version                 string
		o                       vllm.Options
		wantPrepare, wantIngest time.Duration
	}{
		{"0.6.3", vllm.Options{}, 2900 * us, 0},
		{"0.6.5", vllm.Options{}, 9900 * us, 0},
		{"0.9.1", vllm.Options{}, 9900 * us, 0},
		{"0.9.2", vllm.Options{}, 2900 * us, 0},
		{"0.10.2", vllm.Options{}, 2900 * us, 0},
		{"0.11.0", vllm.Options{}, 16680 * us, 22000 * us},
		{"0.11.0", vllm.Options{HostSpeed: 2}, 8340 * us, 11000 * us},
		{"0.11.0", vllm.Options{Offline: true}, 0, 0},
		{"0.11.0", vllm.Options{NoHostOverhead: true}, 0, 0},
		{"0.11.0", vllm.Options{ModelID: "deepseek-ai/DeepSeek-R1-0528"}, 16680 * us, 22000 * us},
		{"0.11.1", vllm.Options{}, 2900 * us, 22000 * us},
		{"0.11.2", vllm.Options{ModelID: "deepseek-ai/DeepSeek-R1-0528"}, 2900 * us, 22000 * us},
		{"0.12.0", vllm.Options{}, 2900 * us, 0},
		{"0.18.0", vllm.Options{}, 2900 * us, 0},
	} {
		r, err := resolve(t, c.version, "", "Qwen2-7B", "H100", c.o)
		if err != nil {
			t.Fatal(err)
		}
		if d := r.ChatPrepare - c.wantPrepare; d < -us || d > us {
			t.Errorf("%s %+v: ChatPrepare %v, want %v", c.version, c.o, r.ChatPrepare, c.wantPrepare)
		}
		if d := r.ChatIngest - c.wantIngest; d < -us || d > us {
			t.Errorf("%s %+v: ChatIngest %v, want %v", c.version, c.o, r.ChatIngest, c.wantIngest)
		}
	}
}

// Async scheduling (V1): --async-scheduling from 0.10, on by default from
// 0.14 unless --no-async-scheduling or pipeline parallelism; it overlaps
// the engine core's scheduling with the GPU, so a step gets shorter.
func TestAsyncSchedulingByRelease(t *testing.T) {
	decode := perf.StepShape{Decodes: 64, AttnPairs: 64 * 1000, KVTokens: 64 * 1001}
	sync := map[string]time.Duration{}
	for _, c := range []struct {
		version string
		o       vllm.Options
		want    vllm.Overlap
	}{
		{"0.11.0", vllm.Options{}, vllm.OverlapEngineCore},
		{"0.11.0", vllm.Options{AsyncScheduling: new(true)}, vllm.OverlapAsyncScheduling},
		{"0.13.0", vllm.Options{}, vllm.OverlapEngineCore},
		{"0.14.0", vllm.Options{}, vllm.OverlapAsyncScheduling},
		{"0.15.1", vllm.Options{}, vllm.OverlapAsyncScheduling},
		{"0.15.1", vllm.Options{AsyncScheduling: new(false)}, vllm.OverlapEngineCore},
		{"0.15.1", vllm.Options{PipelineParallel: 2}, vllm.OverlapEngineCore},
		{"0.8.5", vllm.Options{}, vllm.OverlapEngineCore},
	} {
		r, err := resolve(t, c.version, "", "Qwen2-7B", "H100", c.o)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := r.StepModel.(*vllm.HostStepModel)
		if !ok {
			t.Fatalf("%s %+v: step model %T", c.version, c.o, r.StepModel)
		}
		if m.Host.Overlap != c.want {
			t.Errorf("%s %+v: overlap %s, want %s", c.version, c.o, m.Host.Overlap, c.want)
		}
		if c.o.PipelineParallel == 0 {
			if c.want == vllm.OverlapEngineCore {
				sync[c.version] = m.StepTime(decode)
			} else if s, ok := sync[c.version]; ok && m.StepTime(decode) >= s {
				t.Errorf("%s: a decode step takes %v with async scheduling, %v without; want shorter", c.version, m.StepTime(decode), s)
			}
		}
	}
	r, err := resolve(t, "0.15.1", "", "Qwen2-7B", "H100", vllm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := r.StepModel.StepTime(decode); s >= sync["0.15.1"] || sync["0.15.1"] == 0 {
		t.Errorf("0.15.1: default step %v, with --no-async-scheduling %v; want the default shorter", s, sync["0.15.1"])
	}
}

// TestV1OfflineTokenBudget: V1 gives the LLM class (the throughput and
// latency benchmarks) its own max_num_batched_tokens default, 16384 on
// GPUs with ≥ 70 GiB and 8192 below, where the API server takes 8192 and
// 2048; max_num_seqs is the same for both, a flag wins over either, and
// V0 has no such split.
func TestV1OfflineTokenBudget(t *testing.T) {
	for _, c := range []struct {
		version          string
		eng              engine.Version
		gpu              string
		offline          bool
		flag             int
		wantTokens, seqs int
	}{
		{"0.8.5", engine.V1, "H100", false, 0, 8192, 1024},
		{"0.8.5", engine.V1, "H100", true, 0, 16384, 1024},
		{"0.8.5", engine.V1, "L4", false, 0, 2048, 256},
		{"0.8.5", engine.V1, "L4", true, 0, 8192, 256},
		{"0.11.0", engine.V1, "A100-80GB", true, 0, 8192, 256}, // no large defaults for A100s from 0.9.0
		{"0.8.5", engine.V1, "A100-80GB", true, 0, 16384, 1024},
		{"0.8.5", engine.V1, "H100", true, 4096, 4096, 1024},
		{"0.6.6", engine.V0, "H100", true, 0, 4096, 256}, // max(max_model_len, 2048)
	} {
		r, err := resolve(t, c.version, c.eng, "Llama-3-8B", c.gpu, vllm.Options{MaxModelLen: 4096, Offline: c.offline, MaxNumBatchedTokens: c.flag})
		if err != nil {
			t.Fatal(err)
		}
		if d := r.Deployment; d.MaxNumBatchedTokens != c.wantTokens || d.MaxNumSeqs != c.seqs {
			t.Errorf("%s %s on %s, offline %v, --max-num-batched-tokens %d: %d tokens and %d sequences, want %d and %d",
				c.version, c.eng, c.gpu, c.offline, c.flag, d.MaxNumBatchedTokens, d.MaxNumSeqs, c.wantTokens, c.seqs)
		}
	}
}

// TestV1GraphsByMaxSeqsRelease: from 0.10.0 (PR #20628) V1's CUDA graphs
// stop at min(2 × max_num_seqs, 512) tokens; V0 and older V1 releases
// keep their own rules.
func TestV1GraphsByMaxSeqsRelease(t *testing.T) {
	for _, c := range []struct {
		version string
		eng     engine.Version
		want    bool
	}{
		{"0.9.2", engine.V1, false},
		{"0.10.0", engine.V1, true},
		{"0.15.1", engine.V1, true},
		{"0.6.0", engine.V0, false},
	} {
		r, err := resolve(t, c.version, c.eng, "Qwen2-0.5B", "H100", vllm.Options{MaxNumSeqs: 128})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Deployment.V1GraphsByMaxSeqs; got != c.want {
			t.Errorf("%s: V1GraphsByMaxSeqs %v, want %v", c.version, got, c.want)
		}
	}
}

// ChatTemplateLines says, on 0.11.0 only, which chat template the
// per-request parse times and what it costs a request on this host.
func TestChatTemplateLines(t *testing.T) {
	for _, c := range []struct {
		version string
		o       vllm.Options
		want    string // "" for no line
	}{
		{"0.11.0", vllm.Options{ModelID: "Qwen/Qwen3-8B"}, "vLLM 0.11.0 parses the chat template on every chat request: the qwen3 chat template (measured), 12.06 ms"},
		{"0.11.0", vllm.Options{ModelID: "Qwen/Qwen3-8B", HostSpeed: 2}, "the qwen3 chat template (measured), 6.03 ms"},
		{"0.11.0", vllm.Options{ModelID: "meta-llama/Llama-3.1-8B-Instruct"}, "a chat template not measured here (deepseek-r1-0528's cost assumed), 13.78 ms"},
		{"0.11.0", vllm.Options{ModelID: "Qwen/Qwen3-8B", Offline: true}, ""},
		{"0.11.1", vllm.Options{ModelID: "Qwen/Qwen3-8B"}, ""},
		{"0.10.2", vllm.Options{ModelID: "Qwen/Qwen3-8B"}, ""},
	} {
		r, err := resolve(t, c.version, "", "Qwen3-8B", "H100", c.o)
		if err != nil {
			t.Fatal(err)
		}
		lines := vllm.ChatTemplateLines(r)
		switch {
		case c.want == "" && len(lines) != 0:
			t.Errorf("%s %+v: lines %v, want none", c.version, c.o, lines)
		case c.want != "" && (len(lines) != 1 || !strings.Contains(lines[0].Text, c.want) || lines[0].Warning):
			t.Errorf("%s %+v: lines %v, want one info line containing %q", c.version, c.o, lines, c.want)
		}
	}
}
