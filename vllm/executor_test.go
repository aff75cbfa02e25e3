package vllm_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
)

// TestExecutorBackend: vLLM's default per world size and node count, the
// refused combinations, and the Ray per-step host cost per engine.
func TestExecutorBackend(t *testing.T) {
	cases := []struct {
		name, version string
		o             vllm.Options
		want          vllm.ExecutorBackend
		wantDefault   bool
		wantErr       string
	}{
		{"one GPU: uni", "0.8.5", vllm.Options{MaxModelLen: 8192}, vllm.ExecutorUni, true, ""},
		{"TP2 one node: mp", "0.8.5", vllm.Options{TensorParallel: 2}, vllm.ExecutorMP, true, ""},
		{"TP2 two nodes: ray", "0.8.5", vllm.Options{TensorParallel: 2, Nodes: 2}, vllm.ExecutorRay, true, ""},
		// PR #5230 (0.5.0) made mp the single-node default; Ray before.
		{"TP2 one node, 0.4.3: ray", "0.4.3", vllm.Options{TensorParallel: 2, MaxModelLen: 4096}, vllm.ExecutorRay, true, ""},
		{"TP2 one node, 0.5.0: mp", "0.5.0", vllm.Options{TensorParallel: 2, MaxModelLen: 4096}, vllm.ExecutorMP, true, ""},
		{"explicit mp in 0.4.3", "0.4.3", vllm.Options{TensorParallel: 2, MaxModelLen: 4096, DistributedExecutorBackend: "mp"}, vllm.ExecutorMP, false, ""},
		{"explicit ray on one node", "0.6.6", vllm.Options{TensorParallel: 2, DistributedExecutorBackend: "ray"}, vllm.ExecutorRay, false, ""},
		{"uni with TP2", "0.8.5", vllm.Options{TensorParallel: 2, DistributedExecutorBackend: "uni"}, "", false, "'uni' runs a single GPU, but world_size is 2"},
		{"mp across nodes before 0.11", "0.8.5", vllm.Options{PipelineParallel: 2, Nodes: 2, DistributedExecutorBackend: "mp"}, "", false, "'mp' cannot span 2 nodes in vLLM 0.8.5; use 'ray'"},
		{"mp across nodes in 0.11", "0.11.0", vllm.Options{PipelineParallel: 2, Nodes: 2, DistributedExecutorBackend: "mp"}, vllm.ExecutorMP, false, ""},
		{"unknown backend", "0.8.5", vllm.Options{DistributedExecutorBackend: "slurm"}, "", false, "argument --distributed-executor-backend: invalid choice: 'slurm' (choose from 'ray', 'mp', 'uni')"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := resolve(t, c.version, "", "Qwen2-7B", "A10", c.o)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Executor != c.want || r.ExecutorDefaulted != c.wantDefault {
				t.Errorf("executor %q defaulted %v, want %q %v", r.Executor, r.ExecutorDefaulted, c.want, c.wantDefault)
			}
		})
	}
}

func TestExecutorErrorNamesTheOption(t *testing.T) {
	_, err := resolve(t, "0.8.5", "", "Qwen2-7B", "A10", vllm.Options{TensorParallel: 2, DistributedExecutorBackend: "uni"})
	var oe *vllm.OptionError
	if !errors.As(err, &oe) || oe.Option != "distributed_executor_backend" {
		t.Fatalf("error %v does not name distributed_executor_backend", err)
	}
}

// TestRayStepCost: Ray adds host time on the critical path of every step:
// remote calls in V0, compiled graphs in V1; mp is the fitted baseline.
func TestRayStepCost(t *testing.T) {
	shape := perf.StepShape{Decodes: 8, KVTokens: 8 * 512}
	cases := []struct {
		version string
		want    time.Duration
	}{{"0.6.6", 1000 * time.Microsecond}, {"0.8.5", 270 * time.Microsecond}}
	for _, c := range cases {
		mp, err := resolve(t, c.version, "", "Qwen2-7B", "A10", vllm.Options{TensorParallel: 2, DistributedExecutorBackend: "mp"})
		if err != nil {
			t.Fatal(err)
		}
		ray, err := resolve(t, c.version, "", "Qwen2-7B", "A10", vllm.Options{TensorParallel: 2, DistributedExecutorBackend: "ray"})
		if err != nil {
			t.Fatal(err)
		}
		if got := ray.StepModel.StepTime(shape) - mp.StepModel.StepTime(shape); got != c.want {
			t.Errorf("%s: ray adds %v a step, want %v", c.version, got, c.want)
		}
	}
}

// TestStepInputBroadcastsByEngine: V0's driver broadcasts nine input
// tensors to its TP group before every step; V1's workers build their own
// inputs.
func TestStepInputBroadcastsByEngine(t *testing.T) {
	for _, c := range []struct {
		version string
		want    int
	}{{"0.5.4", 9}, {"0.6.6", 9}, {"0.8.5", 0}, {"0.11.0", 0}} {
		r, err := resolve(t, c.version, "", "Qwen2-7B", "A10", vllm.Options{TensorParallel: 2, MaxModelLen: 4096})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Deployment.StepInputBroadcasts; got != c.want {
			t.Errorf("%s: %d input broadcasts a step, want %d", c.version, got, c.want)
		}
	}
}

// TestDistributedLines: the placement, transport and warning lines.
func TestDistributedLines(t *testing.T) {
	socket, _ := perf.LookupLink("socket-25g")
	roce, _ := perf.LookupLink("roce-200g")
	cases := []struct {
		name     string
		o        vllm.Options
		want     []string
		wantWarn bool
	}{
		{"one GPU", vllm.Options{MaxModelLen: 8192}, nil, false},
		{"TP2 over sockets", vllm.Options{TensorParallel: 2, Nodes: 2, NodeLink: socket},
			[]string{"Defaulting to use ray for distributed inference", "Connected to Ray cluster (modelled): 2 node(s), 2 GPUs",
				"node 1: ranks 1-1 (PP stage 0, TP ranks 1)", "Channel 00 : 0[0] -> 1[0] via NET/Socket/0"}, true},
		{"TP2 over RoCE: no warning", vllm.Options{TensorParallel: 2, Nodes: 2, NodeLink: roce},
			[]string{"via NET/IB/0/GDRDMA"}, false},
		{"PP2 over sockets: TP inside nodes, no warning", vllm.Options{TensorParallel: 1, PipelineParallel: 2, Nodes: 2, NodeLink: socket},
			[]string{"PP send stage 0 -> 1: 0[0] -> 1[0] via NET/Socket/0 (socket-25g)"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := resolve(t, "0.8.5", "", "Qwen2-7B", "A10", c.o)
			if err != nil {
				t.Fatal(err)
			}
			lines := vllm.DistributedLines(r)
			var text []string
			warned := false
			for _, l := range lines {
				text = append(text, l.Text)
				warned = warned || l.Warning
			}
			all := strings.Join(text, "\n")
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("missing %q in:\n%s", w, all)
				}
			}
			if warned != c.wantWarn {
				t.Errorf("warning %v, want %v:\n%s", warned, c.wantWarn, all)
			}
			if c.want == nil && len(lines) != 0 {
				t.Errorf("single GPU logs %d lines", len(lines))
			}
		})
	}
}

// On an NVLS node the distributed setup says what NCCL's NVLink SHARP
// buffers take, in NCCL's terms, where the release counts them.
func TestDistributedLinesNVLS(t *testing.T) {
	for _, c := range []struct {
		version string
		want    bool
	}{{"0.6.4", true}, {"0.6.3", false}} {
		r, err := resolve(t, c.version, "", "testdata/Llama-3.1-405B-FP8", "H100-SXM", vllm.Options{TensorParallel: 8, MaxModelLen: 8192})
		if err != nil {
			t.Fatal(err)
		}
		var all []string
		for _, l := range vllm.DistributedLines(r) {
			all = append(all, l.Text)
		}
		text := strings.Join(all, "\n")
		const line = "NCCL INFO NVLS on the TP group: nHeads 8 nvlsPerRankSize 301989888 nvlsTotalSize 2415919104, on each of 2 communicators (4.50 GiB per GPU"
		if got := strings.Contains(text, line); got != c.want {
			t.Errorf("%s: NVLS line present %v, want %v:\n%s", c.version, got, c.want, text)
		}
	}
}
