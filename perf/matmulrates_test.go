package perf

import (
	"math"
	"strings"
	"testing"
)

// TestMatmulRatesAgreeWithMAMF checks the community matmul rates against
// an independent measurement of the same quantity: the Maximum Achievable
// Matmul FLOPS table behind gpuFamilyEfficiency (A100 0.869, H100 0.803,
// B200 0.776 of their BF16 peaks). One script's best square matmul should
// land within a few percent of a shape search's best on the same part.
func TestMatmulRatesAgreeWithMAMF(t *testing.T) {
	rates, err := matmulRates()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"A100-80GB", "H100-SXM", "B200"} {
		g, err := LookupGPU(name)
		if err != nil {
			t.Fatal(err)
		}
		rate, ok := rates[name]
		if !ok {
			t.Fatalf("no matmul rate for %s", name)
		}
		mamf := gpuFamilyEfficiency[name].gemm * g.BF16FLOPS
		if !within(rate, mamf, 0.035) {
			t.Errorf("%s: %.1f TFLOP/s in the matmul table, %.1f from the MAMF fraction", name, rate/tf, mamf/tf)
		}
	}
}

// TestDerivedComputeUsesMeasuredRates: a derived GPU's compute share
// scales by the measured rates where both parts have one, by the data
// sheets' peaks otherwise, and its memory share by the bandwidths either
// way.
func TestDerivedComputeUsesMeasuredRates(t *testing.T) {
	gpu := func(name string) GPU {
		g, err := LookupGPU(name)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	l40s, l4, l40, h100, h20 := gpu("L40S"), gpu("L4"), gpu("L40"), gpu("H100-SXM"), gpu("H20")
	cases := []struct {
		name     string
		src, dst GPU
		fp8      bool
		flops    float64
		bytes    float64
		want     float64
	}{
		// The L4's 72 W cap: 70.89 TFLOP/s against the L40S's 269.15,
		// where the data sheets' 121 and 362 TF would give 2.99.
		{"L4 from L40S, BF16 compute", l40s, l4, false, 1e12, 0, 269.15 / 70.89},
		{"L4 from L40S, FP8 compute", l40s, l4, true, 1e12, 0, (733.0 / 242) * (269.15 / 362) / (70.89 / 121)},
		{"L4 from L40S, memory", l40s, l4, false, 0, 1e9, 864.0 / 300},
		{"L40 from L40S: no rate for the L40, the peaks", l40s, l40, false, 1e12, 0, l40s.BF16FLOPS / l40.BF16FLOPS},
		{"H20 from H100: both measured", h100, h20, false, 1e12, 0, 790.59 / 142.06},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := deriveScale(c.src, c.dst, c.fp8, c.flops, c.bytes)
			if !within(got, c.want, 1e-6) {
				t.Errorf("deriveScale = %.4f, want %.4f", got, c.want)
			}
		})
	}
	if got, peaks := deriveScale(l40s, l4, false, 1e12, 0), l40s.BF16FLOPS/l4.BF16FLOPS; math.Abs(got/peaks-1) < 0.2 {
		t.Errorf("the L4's compute is %.2f times the L40S's, within 20%% of the peaks' %.2f: the measured rates were not applied", got, peaks)
	}
}

func TestParseMatmulRates(t *testing.T) {
	const header = "# comment\ngpu\tbf16_tflops\tsubmissions\n"
	cases := []struct {
		name, text, wantErr string
		want                map[string]float64
	}{
		{"rows", header + "L4\t70.89\t1\nL40S\t269.15\t1\n", "", map[string]float64{"L4": 70.89 * tf, "L40S": 269.15 * tf}},
		{"no header", "L4\t70.89\t1\n", "header", nil},
		{"empty", "# only a comment\n", "no header", nil},
		{"not a number", header + "L4\tfast\t1\n", "no rate", nil},
		{"zero", header + "L4\t0\t1\n", "no rate", nil},
		{"one column", header + "L4\n", "no rate", nil},
		{"unknown GPU", header + "Voodoo2\t0.1\t1\n", "Voodoo2", nil},
		{"two rates for one part", header + "L4\t70\t1\nL4\t71\t1\n", "second rate for L4", nil},
		{"an alias is the catalog's name", header + "l4-24gb\t70.89\t1\n", "", map[string]float64{"L4": 70.89 * tf}},
		{"an alias and its name twice", header + "L4\t70\t1\nl4-24gb\t71\t1\n", "second rate for L4", nil},
		{"overflowing rate", header + "L4\t1e308\t1\n", "no rate", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseMatmulRates(c.text)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("%d rates, want %d", len(got), len(c.want))
			}
			for g, v := range c.want {
				if !within(got[g], v, 1e-12) {
					t.Errorf("%s: %g, want %g", g, got[g], v)
				}
			}
		})
	}
}

func FuzzParseMatmulRates(f *testing.F) {
	f.Add(matmulRatesFile)
	f.Add("gpu\tbf16_tflops\nL4\t1e308\n")
	f.Add("gpu\tbf16_tflops\n\tNaN\n")
	f.Fuzz(func(t *testing.T, text string) {
		rates, err := parseMatmulRates(text)
		if err != nil {
			return
		}
		for g, v := range rates {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("%s: rate %g accepted", g, v)
			}
		}
	})
}

// TestEfficiencyRowsFollowMatmulRates: the roofline's saturated GEMM rate
// of a part with a measured matmul rate and no MAMF row is that rate over
// its data sheet's BF16 peak (capped at 1), to three decimals.
func TestEfficiencyRowsFollowMatmulRates(t *testing.T) {
	rates, err := matmulRates()
	if err != nil {
		t.Fatal(err)
	}
	mamf := map[string]bool{"H100-SXM": true, "H200": true, "A100-80GB": true, "B200": true}
	for name, rate := range rates {
		if mamf[name] {
			continue
		}
		g, err := LookupGPU(name)
		if err != nil {
			t.Fatal(err)
		}
		want := math.Min(rate/g.BF16FLOPS, 1)
		if got := gpuFamilyEfficiency[name].gemm; math.Abs(got-want) > 0.0005 {
			t.Errorf("%s: GEMM efficiency %.3f, the measured rate gives %.4f", name, got, want)
		}
	}
}
