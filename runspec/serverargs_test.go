package runspec

import (
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/vllm"
)

func TestServerArgs(t *testing.T) {
	tests := []struct {
		args    []string
		want    []string
		ignored []string
		err     string
	}{
		{args: []string{"--max_num_seqs", "64", "-tp=2", "--enable-prefix-caching", "--disable-log-requests", "--port", "8000"},
			want: []string{"--max-num-seqs", "64", "--enable-prefix-caching"}, ignored: []string{"--port", "--disable-log-requests"}},
		{args: []string{"--enable-chunked-prefill=false", "--no-enable-prefix-caching", "--gpu-memory-utilization", "0.95"},
			want: []string{"--gpu-memory-utilization", "0.95", "--enable-chunked-prefill=false", "--no-enable-prefix-caching"}},
		{args: []string{"--swap-space", "16", "--enforce-eager", "--distributed-executor-backend", "ray"},
			want: []string{"--swap-space", "16", "--distributed-executor-backend", "ray", "--enforce-eager"}},
		{args: []string{"meta-llama/Llama-3.1-8B", "--max-model-len", "4096"}, want: []string{"--max-model-len", "4096"}},
		{args: []string{"--speculative-model", "x"}, err: "server flag --speculative-model is not modelled by sim"},
		{args: []string{"-O3"}, err: "server flag -O3 is not modelled by sim"},
		// runspec.Engine's flags that only servebench has are not vllm serve's.
		{args: []string{"--host-speed", "2"}, err: "server flag --host-speed is not modelled by sim"},
		{args: []string{"--gpu", "H100"}, err: "server flag --gpu is not modelled by sim"},
		{args: []string{"--model", "Qwen/Qwen3-8B", "--dtype", "bfloat16", "-q", "fp8", "--kv_cache_dtype", "fp8"},
			want: []string{}, ignored: []string{"--model"}},
		{args: []string{"--no-enable-chunked-prefill", "--max-num-batched-tokens=4096", "-pp", "2"},
			want: []string{"--max-num-batched-tokens", "4096", "--enable-chunked-prefill=false"}},
		{args: []string{"--max-num-seqs", "many"}, err: "server flags: invalid argument"},
		{args: []string{"--async-scheduling"}, want: []string{"--async-scheduling"}},
		{args: []string{"--no-async-scheduling"}, want: []string{"--no-async-scheduling"}},
		{args: []string{"--num-scheduler-steps", "8", "--multi-step-stream-outputs=False"},
			want: []string{"--num-scheduler-steps", "8", "--multi-step-stream-outputs=false"}},
		{args: []string{"--multi-step-stream-outputs"}, want: []string{"--multi-step-stream-outputs"}},
		{args: []string{"--disable-frontend-multiprocessing", "--disable-log-requests"},
			want: []string{"--disable-frontend-multiprocessing"}, ignored: []string{"--disable-log-requests"}},
	}
	for _, tt := range tests {
		f, err := ParseServerArgs(tt.args)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		var o vllm.Options
		if got := f.Apply(&o); !slices.Equal(got, tt.want) {
			t.Errorf("%q: sim flags %q, want %q", tt.args, got, tt.want)
		}
		if want := slices.Contains(tt.args, "--disable-frontend-multiprocessing"); o.DisableFrontendMultiprocessing != want {
			t.Errorf("%q: DisableFrontendMultiprocessing %v, want %v", tt.args, o.DisableFrontendMultiprocessing, want)
		}
		if got := f.Ignored(); !slices.Equal(got, tt.ignored) && len(got)+len(tt.ignored) > 0 {
			t.Errorf("%q: ignored %q, want %q", tt.args, got, tt.ignored)
		}
	}
}

// Server flags come from corpus files and from calibrate's --server-args:
// any string parses or fails with one line, and never panics.
func FuzzParseServerArgs(f *testing.F) {
	for _, s := range []string{"--max_num_seqs 64 -tp=2 --enable-prefix-caching", "--num-scheduler-steps 8 --multi-step-stream-outputs=False",
		"--max-num-seqs many", "-O3", "model --max-model-len 4096 extra", "--no-enable-chunked-prefill --swap-space -1", "--dtype"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args, err := ParseServerArgs(strings.Fields(line))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		var o vllm.Options
		args.Apply(&o)
		_ = args.Ignored()
	})
}
