package serve

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/runspec"
)

// TestRunSpecDefaultsAreServes: the serve flags' defaults, which runspec
// states without importing serve, are serve's own.
func TestRunSpecDefaultsAreServes(t *testing.T) {
	s := runspec.New(runspec.Serve)
	if s.Server.Tokenizer != DefaultTokenizer || s.Server.ErrorStyle != string(ErrorStyleNested) {
		t.Errorf("runspec's serve defaults: tokenizer %q, error style %q; serve's %q, %q", s.Server.Tokenizer, s.Server.ErrorStyle, DefaultTokenizer, ErrorStyleNested)
	}
}

// TestConfigOfAsyncOutputLag: serve delivers a step's tokens one step
// late and runs multi-step groups where sim does (V0 0.6–0.10 with async
// output processing; --num-scheduler-steps, streamed by default from
// 0.6.3), and not when switched off, on V1 or before 0.6, or under fixed
// latencies (what the client sees end to end).
func TestConfigOfAsyncOutputLag(t *testing.T) {
	for _, tt := range []struct {
		name   string
		args   []string
		want   bool
		steps  int
		stream bool
	}{
		{"0.6.4", []string{"--vllm-version", "0.6.4"}, true, 1, true},
		{"0.6.4 with it off", []string{"--vllm-version", "0.6.4", "--disable-async-output-proc"}, false, 1, true},
		{"0.5.4", []string{"--vllm-version", "0.5.4"}, false, 1, false},
		{"V1", []string{"--vllm-version", "0.8.5"}, false, 1, false},
		{"multi-step", []string{"--vllm-version", "0.6.4", "--num-scheduler-steps", "8"}, true, 8, true},
		{"multi-step 0.6.0", []string{"--vllm-version", "0.6.0", "--num-scheduler-steps", "10"}, true, 10, false},
		{"multi-step without async output", []string{"--vllm-version", "0.6.0", "--num-scheduler-steps", "8", "--disable-async-output-proc"}, false, 8, false},
		{"fixed latencies", []string{"--vllm-version", "0.6.4", "--time-to-first-token", "20ms"}, false, 1, true},
		{"fixed latencies, multi-step", []string{"--vllm-version", "0.6.4", "--num-scheduler-steps", "8", "--time-to-first-token", "20ms"}, false, 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := runspec.New(runspec.Serve)
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			s.Register(fs)
			if err := fs.Parse(append([]string{"--model", "Qwen2.5-0.5B-Instruct", "--gpu", "H100"}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			s.MarkChanged(fs)
			r, err := s.Engine.Resolve(t.Context(), s.ChangedFunc(), s.Env)
			if err != nil {
				t.Fatal(err)
			}
			cfg, _, err := configOf(t.Context(), s, r)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.AsyncOutputLag != tt.want || max(cfg.SchedulerSteps, 1) != tt.steps || cfg.MultiStepStream != tt.stream {
				t.Errorf("AsyncOutputLag, SchedulerSteps, MultiStepStream = %v, %d, %v; want %v, %d, %v",
					cfg.AsyncOutputLag, cfg.SchedulerSteps, cfg.MultiStepStream, tt.want, tt.steps, tt.stream)
			}
		})
	}
}
