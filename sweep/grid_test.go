package sweep

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantBase []string
		wantAxes []Axis
		wantErr  string
	}{
		{
			name:     "space and equals forms",
			args:     []string{"--num-prompts", "1,2,4", "--request-rate=2,4", "--model", "tiny"},
			wantBase: []string{"--model", "tiny"},
			wantAxes: []Axis{{"num-prompts", []string{"1", "2", "4"}}, {"request-rate", []string{"2", "4"}}},
		},
		{
			name:     "list-valued flags and JSON stay literal",
			args:     []string{"--percentile-metrics", "ttft,tpot,itl", "--extra-body", `{"a":1,"b":2}`, "--metric-percentiles=90,99"},
			wantBase: []string{"--percentile-metrics", "ttft,tpot,itl", "--extra-body", `{"a":1,"b":2}`, "--metric-percentiles", "90,99"},
		},
		{
			name:     "boolean flags and negative numbers",
			args:     []string{"--ignore-eos", "--seed", "-1", "--save-detailed", "--max-concurrency", " 8, 16 "},
			wantBase: []string{"--ignore-eos", "--seed", "-1", "--save-detailed"},
			wantAxes: []Axis{{"max-concurrency", []string{"8", "16"}}},
		},
		{
			name:     "single values pass through",
			args:     []string{"--num-prompts", "100"},
			wantBase: []string{"--num-prompts", "100"},
		},
		{name: "empty list element", args: []string{"--num-prompts", "1,,2"}, wantErr: "empty value"},
		{name: "repeated value", args: []string{"--num-prompts", "1,2,1"}, wantErr: "use repeat"},
		{name: "axis given twice", args: []string{"--num-prompts", "1,2", "--num-prompts=3,4"}, wantErr: "given twice"},
		{name: "swept and fixed", args: []string{"--num-prompts", "1,2", "--num-prompts", "3"}, wantErr: "both swept and fixed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, axes, err := ParseArgs(tt.args, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantBase, base); diff != "" {
				t.Errorf("base (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAxes, axes); diff != "" {
				t.Errorf("axes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGridIsCartesianInCommandLineOrder(t *testing.T) {
	axes := []Axis{{"num-prompts", []string{"1", "2"}}, {"request-rate", []string{"inf", "4"}}}
	points := Grid([]string{"--model", "m"}, axes, 2)
	var got []string
	for _, p := range points {
		got = append(got, fmt.Sprintf("%s %v %s", p.Name, p.Args, p.Result))
	}
	want := []string{
		"000-num-prompts=1_request-rate=inf-r1 [--model m --num-prompts=1 --request-rate=inf] 000-num-prompts=1_request-rate=inf-r1/result.json",
		"001-num-prompts=1_request-rate=inf-r2 [--model m --num-prompts=1 --request-rate=inf] 001-num-prompts=1_request-rate=inf-r2/result.json",
		"002-num-prompts=1_request-rate=4-r1 [--model m --num-prompts=1 --request-rate=4] 002-num-prompts=1_request-rate=4-r1/result.json",
		"003-num-prompts=1_request-rate=4-r2 [--model m --num-prompts=1 --request-rate=4] 003-num-prompts=1_request-rate=4-r2/result.json",
		"004-num-prompts=2_request-rate=inf-r1 [--model m --num-prompts=2 --request-rate=inf] 004-num-prompts=2_request-rate=inf-r1/result.json",
		"005-num-prompts=2_request-rate=inf-r2 [--model m --num-prompts=2 --request-rate=inf] 005-num-prompts=2_request-rate=inf-r2/result.json",
		"006-num-prompts=2_request-rate=4-r1 [--model m --num-prompts=2 --request-rate=4] 006-num-prompts=2_request-rate=4-r1/result.json",
		"007-num-prompts=2_request-rate=4-r2 [--model m --num-prompts=2 --request-rate=4] 007-num-prompts=2_request-rate=4-r2/result.json",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("points (-want +got):\n%s", diff)
	}
	if d := points[3].Describe(); d != "num-prompts=1 request-rate=4 (run 2)" {
		t.Errorf("Describe = %q", d)
	}
	if single := Grid(nil, nil, 1); len(single) != 1 || single[0].Name != "000" {
		t.Errorf("no axes gives %+v, want one point", single)
	}
}

func TestGridNamesAreFilesystemSafe(t *testing.T) {
	points := Grid(nil, []Axis{{"dataset-path", []string{"/data/../x y.jsonl"}}}, 1)
	if name := points[0].Name; strings.ContainsAny(name, "/ ") || strings.Contains(name, "..") && strings.Contains(name, "/") {
		t.Errorf("unsafe directory name %q", name)
	}
	if got := points[0].Args[0]; got != "--dataset-path=/data/../x y.jsonl" {
		t.Errorf("the flag value itself must be untouched, got %q", got)
	}
}
