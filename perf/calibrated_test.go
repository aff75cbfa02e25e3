package perf

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestCalibratedFromFile(t *testing.T) {
	c, err := LoadCalibratedFile("testdata/calibrated.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		s    StepShape
		want time.Duration
	}{
		{"empty", StepShape{}, 0},
		// 2500 + 40·10 + 0.002·5000 + 0.00001·4990 µs
		{"decode", StepShape{Decodes: 10, KVTokens: 5000, AttnPairs: 4990}, 2910*time.Microsecond + 49900*time.Nanosecond/1000},
		// 2500 + 25·1000 + 0.002·1000 + 0.00001·500500 µs
		{"prefill", StepShape{PrefillTokens: 1000, Prefills: 1, PrefillsDone: 1, KVTokens: 1000, AttnPairs: 500500}, 27502*time.Microsecond + 5005*time.Nanosecond},
		// swaps alone: the base plus 150 µs per block
		{"swap only", StepShape{SwapInBlocks: 2, SwapOutBlocks: 1}, 2500*time.Microsecond + 450*time.Microsecond},
	}
	for _, tt := range tests {
		got := c.StepTime(tt.s)
		if d := got - tt.want; d < -time.Nanosecond || d > time.Nanosecond {
			t.Errorf("%s: StepTime = %v, want %v", tt.name, got, tt.want)
		}
	}
	negative := Calibrated{Base: -1}
	if got := negative.StepTime(decodeStep(1, 1)); got != 0 {
		t.Errorf("negative fit gives %v, want clamped to 0", got)
	}
}

func TestParseCalibratedErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"empty", "", "empty"},
		{"unknown field", "base_ms: 3\n", "field base_ms not found"},
		{"not a number", "decode_us: fast\n", "cannot unmarshal"},
		{"nan", "decode_us: .nan\n", "decode_us is NaN"},
		{"huge", "base_us: 1e300\n", "base_us is 1e+300"},
	}
	for _, tt := range tests {
		_, err := ParseCalibrated([]byte(tt.yaml), "fits/h100.yaml")
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "fits/h100.yaml") {
			t.Errorf("%s: error %v, want it to contain %q and the file name", tt.name, err, tt.want)
		}
	}
	if _, err := ParseCalibrated([]byte(`{"base_us": 100, "decode_us": 30}`), "fit.json"); err != nil {
		t.Errorf("JSON form: %v", err)
	}
}

func FuzzParseCalibrated(f *testing.F) {
	data, err := os.ReadFile("testdata/calibrated.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"attn_pair_us": -1e9}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "fuzz/fit.yaml"
		c, err := ParseCalibrated(data, name)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, s := range []StepShape{decodeStep(256, 100000), prefillStep(1 << 20), {SwapInBlocks: 1 << 30}} {
			if got := c.StepTime(s); got < 0 {
				t.Fatalf("%+v: negative step %v from %+v", s, got, c)
			}
		}
	})
}
