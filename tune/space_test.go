package tune

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servebench/servebench/vllm"
)

func TestParseParam(t *testing.T) {
	tests := []struct {
		in      string
		want    Param
		wantErr string
	}{
		{in: "max_num_seqs=int:16:512:log", want: Param{Name: "max_num_seqs", Kind: KindInt, Low: 16, High: 512, Log: true}},
		{in: "--scheduler-delay-factor=float:0:0.5", want: Param{Name: "scheduler_delay_factor", Kind: KindFloat, High: 0.5}},
		{in: "block_size=8,16,32", want: Param{Name: "block_size", Kind: KindChoice, Choices: []string{"8", "16", "32"}}},
		{in: "enable_chunked_prefill=bool", want: Param{Name: "enable_chunked_prefill", Kind: KindBool}},
		{in: "max_model_len=4096", want: Param{Name: "max_model_len", Kind: KindPinned, Value: "4096"}},
		{in: "max_num_seqs", wantErr: "NAME=int:LOW:HIGH"},
		{in: "max_num_seqs=int:16", wantErr: "a range is int:LOW:HIGH"},
		{in: "max_num_seqs=int:a:9", wantErr: "must be numbers"},
		{in: "max_num_seqs=int:0:9:log", wantErr: "log scale needs low > 0"},
		{in: "max_num_seqs=int:9:1", wantErr: "low <= high"},
		{in: "max_num_seqs=int:1.5:9", wantErr: "whole numbers"},
		{in: "max_num_seqs=int:1:9:lin", wantErr: `may only be "log"`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseParam(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Error(diff)
			}
		})
	}
}

const exampleSpace = `params:
  max_num_seqs: {type: int, low: 16, high: 512, log: true}
  max_num_batched_tokens: {type: int, low: 512, high: 16384, log: true}
  block_size: [8, 16, 32]
  enable_chunked_prefill: {type: bool}
  scheduler_delay_factor: {type: float, low: 0, high: 0.5}
  max_model_len: 4096
conditions:
  - if: enable_chunked_prefill == false
    then: max_num_batched_tokens >= max_model_len
`

func TestParseSpaceYAMLKeepsOrderAndKinds(t *testing.T) {
	s, err := ParseSpaceYAML([]byte(exampleSpace))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range s.Params {
		got = append(got, p.String())
	}
	want := []string{"max_num_seqs=int:16:512:log", "max_num_batched_tokens=int:512:16384:log", "block_size=8,16,32",
		"enable_chunked_prefill=bool", "scheduler_delay_factor=float:0:0.5", "max_model_len=4096"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
	if len(s.Conditions) != 1 || s.Conditions[0].String() != "enable_chunked_prefill == false => max_num_batched_tokens >= max_model_len" {
		t.Errorf("conditions %v", s.Conditions)
	}
}

func TestParseSpaceYAMLErrors(t *testing.T) {
	tests := map[string]string{
		"params:\n  max_num_seqs: {type: int, low: 1, hgh: 9}\n":    `unknown field "hgh"`,
		"params:\n  max_num_seqs: {type: range, low: 1, high: 9}\n": `type "range" is unknown`,
		"params: [a, b]\n": "give a mapping",
		"params:\n  a: [1, 2]\nconditions:\n  - then: a ~ 2\n":      "write NAME OP VALUE",
		"params:\n  max_num_seqs: 8\n":                              "no parameter to sample",
		"parms:\n  max_num_seqs: {type: int, low: 1, high: 9}\n":    "field parms not found",
		"params:\n  block-size: [8, 16]\n":                          "snake_case",
		"params:\n  x: {type: int, low: 1, high: 9}\n  x: [1, 2]\n": "parameter x is given twice",
	}
	for in, want := range tests {
		_, err := ParseSpaceYAML([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", in, err, want)
		}
	}
}

func FuzzParseSpaceYAML(f *testing.F) {
	f.Add([]byte(exampleSpace))
	f.Add([]byte("params:\n  a: [x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSpaceYAML(data)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("parsed space fails validation: %v", err)
		}
	})
}

func TestApplyConditions(t *testing.T) {
	space := &Space{Params: []Param{
		{Name: "max_num_batched_tokens", Kind: KindInt, Low: 256, High: 8192},
		{Name: "enable_chunked_prefill", Kind: KindBool},
		{Name: "block_size", Kind: KindChoice, Choices: []string{"16", "32"}},
	}, Conditions: []Condition{
		{If: "enable_chunked_prefill == false", Then: "max_num_batched_tokens >= max_model_len"},
	}}
	known := map[string]string{"max_model_len": "4096"}
	tests := []struct {
		name     string
		in       Point
		known    map[string]string
		want     string
		repaired []string
		wantErr  string
	}{
		{"chunked on: untouched", Point{"max_num_batched_tokens": "512", "enable_chunked_prefill": "true"}, known, "512", nil, ""},
		{"chunked off: raised to max_model_len", Point{"max_num_batched_tokens": "512", "enable_chunked_prefill": "False"}, known, "4096", []string{"max_num_batched_tokens"}, ""},
		{"already enough", Point{"max_num_batched_tokens": "5000", "enable_chunked_prefill": "false"}, known, "5000", nil, ""},
		{"bound outside the range", Point{"max_num_batched_tokens": "512", "enable_chunked_prefill": "false"}, map[string]string{"max_model_len": "32768"}, "", nil, "cannot be moved within its range"},
		{"unknown name", Point{"max_num_batched_tokens": "512", "enable_chunked_prefill": "false"}, nil, "", nil, "pin it with --param max_model_len=VALUE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repaired, err := space.ApplyConditions(tc.in, tc.known)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.in["max_num_batched_tokens"] != tc.want || !cmp.Equal(repaired, tc.repaired) {
				t.Errorf("got %v repaired %v", tc.in, repaired)
			}
		})
	}
}

func TestDefaultSpaceFollowsTheRelease(t *testing.T) {
	for _, tc := range []struct {
		version         string
		chunked, blocks string
	}{
		{"0.5.4", "enable_chunked_prefill=bool", "block_size=8,16,32"},
		{"0.8.5", "", "block_size=8,16,32,64,128"},
	} {
		p, err := vllm.Lookup(tc.version, "")
		if err != nil {
			t.Fatal(err)
		}
		s := DefaultSpace(p, true)
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		names := map[string]string{}
		for _, prm := range s.Params {
			names[prm.Name] = prm.String()
		}
		if names["block_size"] != tc.blocks || names["enable_chunked_prefill"] != tc.chunked {
			t.Errorf("%s: %v", tc.version, names)
		}
		if tc.chunked == "" && len(s.Conditions) != 1 || tc.chunked != "" && len(s.Conditions) != 2 {
			t.Errorf("%s: conditions %v", tc.version, s.Conditions)
		}
	}
}

func TestVLLMArgs(t *testing.T) {
	s := &Space{Params: []Param{{Name: "max_num_seqs", Kind: KindInt, Low: 1, High: 9}, {Name: "enable_prefix_caching", Kind: KindBool},
		{Name: "enable_chunked_prefill", Kind: KindBool}}}
	p := Point{"max_num_seqs": "8", "enable_prefix_caching": "true", "enable_chunked_prefill": "false"}
	if got := ServeCommand("m", s, p, nil); got != "vllm serve m --max-num-seqs 8 --enable-prefix-caching --no-enable-chunked-prefill" {
		t.Errorf("got %q", got)
	}
	if got := strings.Join(p.Args(s), " "); got != "--max-num-seqs=8 --enable-prefix-caching=true --enable-chunked-prefill=false" {
		t.Errorf("got %q", got)
	}
}
