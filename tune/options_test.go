package tune

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/vllm"
)

// Options turns a point's vLLM option names into the resolver's options;
// a name servebench does not model, or a value of the wrong kind, is an
// error naming the parameter.
func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		point   Point
		check   func(vllm.Options) bool
		wantErr string
	}{
		{"integers", Point{"max_num_seqs": "64", "max_num_batched_tokens": "4096"},
			func(o vllm.Options) bool { return o.MaxNumSeqs == 64 && o.MaxNumBatchedTokens == 4096 }, ""},
		{"a tri-state boolean set off", Point{"enable_chunked_prefill": "false"},
			func(o vllm.Options) bool { return o.EnableChunkedPrefill != nil && !*o.EnableChunkedPrefill }, ""},
		{"async scheduling on", Point{"async_scheduling": "true"},
			func(o vllm.Options) bool { return o.AsyncScheduling != nil && *o.AsyncScheduling }, ""},
		{"async scheduling off", Point{"async_scheduling": "false"},
			func(o vllm.Options) bool { return o.AsyncScheduling != nil && !*o.AsyncScheduling }, ""},
		{"a boolean that is not one", Point{"async_scheduling": "maybe"}, nil, `parameter async_scheduling=maybe: "maybe" is not true or false`},
		{"not an integer", Point{"max_num_seqs": "many"}, nil, `parameter max_num_seqs=many: "many" is not an integer`},
		{"unmodelled", Point{"speculative_model": "x"}, nil, "servebench does not model --speculative_model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Options(vllm.Options{MaxModelLen: 8192}, tc.point)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.MaxModelLen != 8192 || !tc.check(o) {
				t.Errorf("options %+v from %v", o, tc.point)
			}
		})
	}
}

// A real target's load test names its API with --backend; the study's sim
// spec (the prescreen) takes a chat backend from it, so sim screens the
// candidates as the load test will call the server.
func TestParseFixedTakesTheChatBackend(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "Qwen2-0.5B", "--num-prompts", "10"}, "openai"},
		{[]string{"--model", "Qwen2-0.5B", "--num-prompts", "10", "--backend", "openai-chat"}, "openai-chat"},
	} {
		fixed, load, err := ParseFixed(tc.args, TargetEmbedded)
		if err != nil {
			t.Fatal(err)
		}
		if got := fixed.Simulation.Backend; got != tc.want || load.Target.Backend != tc.want {
			t.Errorf("%q: sim backend %q, load backend %q; want %q", tc.args, got, load.Target.Backend, tc.want)
		}
	}
}
