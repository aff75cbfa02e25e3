package vllm

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
)

// TestHostCurve: linear between measured points, the first segment
// through the origin, the last extended by its slope.
func TestHostCurve(t *testing.T) {
	c := newHostCurve([]int{1, 2, 4}, []float64{10, 20, 60}, 1)
	us := time.Microsecond
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{0, 0}, {-3, 0}, {1, 10 * us}, {2, 20 * us}, {3, 40 * us}, {4, 60 * us}, {6, 100 * us}} {
		if got := c.at(tc.n); got != tc.want {
			t.Errorf("at(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
	if got := (hostCurve{}).at(100); got != 0 {
		t.Errorf("empty curve at(100) = %v, want 0", got)
	}
	if got := newHostCurve([]int{1, 2}, []float64{10, 20}, 2.5).at(2); got != 50*us {
		t.Errorf("scaled curve at(2) = %v, want 50µs", got)
	}
}

// TestMeasuredHostTables: every table tools/vllm-hosttime generated
// covers 1 to 1024 running sequences with the curves its engine has, and
// each release line uses the tree measured for it.
func TestMeasuredHostTables(t *testing.T) {
	for _, m := range []*MeasuredHost{&measuredV0_054, &measuredV0_061p2, &measuredV0_98c89e16, &measuredV1_98c89e16} {
		if len(m.Seqs) == 0 || m.Seqs[0] != 1 || m.Seqs[len(m.Seqs)-1] != 1024 {
			t.Errorf("%s: sequences %v, want 1 … 1024", m.Release, m.Seqs)
		}
		for i := 1; i < len(m.Seqs); i++ {
			if m.Seqs[i] <= m.Seqs[i-1] {
				t.Errorf("%s: sequences not increasing: %v", m.Release, m.Seqs)
			}
		}
		curves := [][]float64{m.Schedule, m.Output}
		if m == &measuredV1_98c89e16 {
			curves = append(curves, m.Frontend)
		} else if len(m.Frontend) != 0 {
			t.Errorf("%s: a V0 table has a front-end curve", m.Release)
		}
		for _, c := range curves {
			if len(c) != len(m.Seqs) {
				t.Fatalf("%s: %d values for %d sizes", m.Release, len(c), len(m.Seqs))
			}
			for i, v := range c {
				if !(v > 0) {
					t.Errorf("%s: %v µs at %d sequences", m.Release, v, m.Seqs[i])
				}
			}
			// Host work grows with the batch: 1024 sequences cost more than 100× one.
			if c[len(c)-1] < 100*c[0] {
				t.Errorf("%s: %v µs at 1024 sequences against %v at 1", m.Release, c[len(c)-1], c[0])
			}
		}
	}
	for _, tc := range []struct {
		version string
		e       engine.Version
		want    *MeasuredHost
	}{
		{"0.5.3", engine.V0, &measuredV0_054},
		{"0.6.3", engine.V0, &measuredV0_061p2},
		{"0.8.5", engine.V0, &measuredV0_98c89e16},
		{"0.8.5", engine.V1, &measuredV1_98c89e16},
		{"0.11.0", engine.V1, &measuredV1_98c89e16},
	} {
		p, err := Lookup(tc.version, tc.e)
		if err != nil {
			t.Fatal(err)
		}
		if p.Host.Measured != tc.want {
			t.Errorf("%s %s: host table %v, want %s", tc.version, tc.e, p.Host.Measured, tc.want.Release)
		}
	}
}

// TestSamplerRules: every release takes its sampler's GPU time from a
// measured tree and its peak from that tree or, from 0.18.0, from the
// code; the peak is above perf's one fp32 copy (4 bytes a cell), and fp32
// logits (0.5.5–0.6.1) cost more than the model-dtype ones before them
// (at 256 sequences, vLLM's V0 default).
func TestSamplerRules(t *testing.T) {
	got, kernels := map[string]float64{}, map[string]float64{}
	for _, tc := range []struct{ version, engine string }{
		{"0.5.0", "v0"}, {"0.5.4", "v0"}, {"0.5.5", "v0"}, {"0.6.1", "v0"}, {"0.6.2", "v0"},
		{"0.8.5", "v0"}, {"0.8.5", "v1"}, {"0.11.0", "v1"}, {"0.17.0", "v1"}, {"0.18.0", "v1"},
	} {
		p, err := Lookup(tc.version, engine.Version(tc.engine))
		if err != nil {
			t.Fatal(err)
		}
		b := p.Memory.SamplerPeak.At(256)
		if !(b > 4) || p.Memory.SamplerMeasuredAt == "" {
			t.Errorf("%s %s: sampler %v bytes a cell measured at %q", tc.version, tc.engine, b, p.Memory.SamplerMeasuredAt)
		}
		got[tc.version+tc.engine] = b
		k := p.SamplerKernels
		if k.MeasuredOn != "H100" || len(k.Rows) == 0 {
			t.Fatalf("%s %s: sampler kernels %+v, want the H100 measurement", tc.version, tc.engine, k)
		}
		kernels[tc.version+tc.engine] = k.At(256, 128256)
	}
	// At temperature 0 V0 still builds softmax, log-softmax and every
	// row's rank of the sampled token; V1 takes the argmax of fp32 logits.
	if v0, v1 := kernels["0.8.5v0"], kernels["0.8.5v1"]; !(v0 > 3*v1) {
		t.Errorf("256 rows of a 128K vocabulary: V0 %v µs, V1 %v µs; want V0 above 3× V1", v0, v1)
	}
	if v := kernels["0.11.0v1"]; v < 100 || v > 300 {
		t.Errorf("V1 at 256 rows of a 128K vocabulary: %v µs, want the measured ~170 µs", v)
	}
	// From 0.18.0 top-k/top-p run as a Triton kernel without a sort: the
	// peak is read from the code (14 bytes), the time at temperature 0 is
	// still the measured tree's.
	if got["0.18.0v1"] != 14 || got["0.17.0v1"] != got["0.11.0v1"] {
		t.Errorf("V1 sampler peak 0.11.0 %v, 0.17.0 %v, 0.18.0 %v bytes a cell; want the sort's until 0.18.0, then 14", got["0.11.0v1"], got["0.17.0v1"], got["0.18.0v1"])
	}
	if kernels["0.18.0v1"] != kernels["0.11.0v1"] {
		t.Errorf("V1 sampler time at temperature 0: 0.11.0 %v µs, 0.18.0 %v µs; want the same argmax", kernels["0.11.0v1"], kernels["0.18.0v1"])
	}
	if !(got["0.5.5v0"] > got["0.5.4v0"] && got["0.5.5v0"] > got["0.6.2v0"]) {
		t.Errorf("sampler peaks 0.5.4 %v, 0.5.5 %v, 0.6.2 %v: want 0.5.5's fp32 logits the largest", got["0.5.4v0"], got["0.5.5v0"], got["0.6.2v0"])
	}
}

// TestHostSpeedScalesHostWork: Speed divides every host term, measured
// or not; the GPU's time is untouched.
func TestHostSpeedScalesHostWork(t *testing.T) {
	p, err := Lookup("0.8.5", "v1")
	if err != nil {
		t.Fatal(err)
	}
	s := perf.StepShape{Decodes: 300, PrefillsDone: 2, Prefills: 2, PrefillTokens: 400}
	base := NewHostStepModel(fixedStep(0), p.Host, 1).Parts(s)
	fast := p.Host
	fast.Speed = 2
	got := NewHostStepModel(fixedStep(0), fast, 1).Parts(s)
	for _, c := range []struct {
		name      string
		base, got time.Duration
	}{{"schedule", base.Schedule, got.Schedule}, {"output", base.Output, got.Output}, {"api", base.API, got.API}} {
		if c.base <= 0 {
			t.Fatalf("%s: no host work at speed 1", c.name)
		}
		if d := c.got - c.base/2; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("%s at speed 2: %v, want half of %v", c.name, c.got, c.base)
		}
	}
}

type fixedStep time.Duration

func (f fixedStep) StepTime(perf.StepShape) time.Duration { return time.Duration(f) }

// TestHostCurvePowersOfTwo: the bit-length shortcut for 1, 2, 4, …
// agrees with the general search at every size up to past the end.
func TestHostCurvePowersOfTwo(t *testing.T) {
	m := measuredV1_98c89e16
	fast := newHostCurve(m.Seqs, m.Frontend, 1)
	slow := fast
	slow.pow2 = false
	if !fast.pow2 {
		t.Fatal("measured sizes are not taken as powers of two")
	}
	for n := 0; n <= 3000; n++ {
		if a, b := fast.at(n), slow.at(n); a != b {
			t.Fatalf("at(%d): %v with the shortcut, %v without", n, a, b)
		}
	}
}

// Held back, each measured row count of each table comes back from its
// neighbours within 30 µs, and within 10% from 256 rows up, where the
// sampler is a visible share of a step.
func TestSamplerKernelsReproduceHeldBackRows(t *testing.T) {
	for _, s := range samplerKernels {
		k := s.Kernels
		for v, vocab := range k.Vocabs {
			for i := 1; i+1 < len(k.Rows); i++ {
				held := perf.SamplerKernels{MeasuredOn: k.MeasuredOn, Vocabs: []int{vocab},
					Rows:   slices.Delete(slices.Clone(k.Rows), i, i+1),
					Micros: [][]float64{slices.Delete(slices.Clone(k.Micros[v]), i, i+1)}}
				got, want := held.At(float64(k.Rows[i]), vocab), k.Micros[v][i]
				if math.Abs(got-want) > 30 || (k.Rows[i] >= 256 && math.Abs(got/want-1) > 0.10) {
					t.Errorf("%s %s, %d rows of %d: %.1f µs from its neighbours, measured %.1f", s.Release, s.Engine, k.Rows[i], vocab, got, want)
				}
			}
		}
	}
}
