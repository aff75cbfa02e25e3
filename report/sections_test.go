package report

import (
	"bytes"
	"math"
	"testing"
)

func TestPreambleMatchesVLLM(t *testing.T) {
	tests := []struct {
		in   RunInfo
		want string
	}{
		// As in the captured vLLM output in testdata.
		{RunInfo{RequestRate: 4, Burstiness: 1}, "Traffic request rate: 4.0\nBurstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: None\n"},
		{RunInfo{RequestRate: math.Inf(1), Burstiness: 0.5, MaxConcurrency: 8}, "Traffic request rate: inf\nBurstiness factor: 0.5 (Gamma distribution)\nMaximum request concurrency: 8\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := WritePreamble(&b, &tt.in); err != nil {
			t.Fatal(err)
		}
		if b.String() != tt.want {
			t.Errorf("got %q\nwant %q", b.String(), tt.want)
		}
	}
}

func TestSectionLayout(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSection(&b, "Simulated Engine", [][2]string{{"Engine steps:", "42"}}); err != nil {
		t.Fatal(err)
	}
	want := "-----------------Simulated Engine-----------------\n" +
		"Engine steps:                            42        \n" +
		"==================================================\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}
