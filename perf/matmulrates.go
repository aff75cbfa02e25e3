package perf

import (
	_ "embed"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
)

// A derived GPU's compute time scales by the ratio of the data sheets'
// dense peaks (deriveMixedScale), which assumes both parts reach the same
// fraction of their peak. They do not where power caps differ: the same
// BF16 matmul script reaches 70.9 TFLOP/s on an L4 (72 W), 0.59 of its
// 121 TF, and 269 on an L40S (350 W), 0.74 of its 362. Where both parts
// have such a rate (kerneltables/matmul-rates.tsv; doc.go, "GPUs without
// a table of their own"), the ratio of the rates replaces the ratio of the
// peaks.

//go:embed kerneltables/matmul-rates.tsv
var matmulRatesFile string

// matmulRates is the measured BF16 matmul rate of each catalog GPU the
// table has, in FLOP/s.
var matmulRates = sync.OnceValues(func() (map[string]float64, error) {
	return parseMatmulRates(matmulRatesFile)
})

func parseMatmulRates(text string) (map[string]float64, error) {
	rates := map[string]float64{}
	header := false
	for i, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if !header {
			if len(f) < 2 || f[0] != "gpu" || f[1] != "bf16_tflops" {
				return nil, fmt.Errorf("line %d: header %q, want gpu, bf16_tflops", i+1, line)
			}
			header = true
			continue
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("line %d: %q has no rate", i+1, line)
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil || !(v > 0) || math.IsInf(v*tf, 0) {
			return nil, fmt.Errorf("line %d: %q has no rate", i+1, line)
		}
		g, err := LookupGPU(f[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if _, dup := rates[g.Name]; dup {
			return nil, fmt.Errorf("line %d: a second rate for %s", i+1, g.Name)
		}
		rates[g.Name] = v * tf
	}
	if !header {
		return nil, fmt.Errorf("no header line")
	}
	return rates, nil
}

// matmulRate is the measured BF16 matmul rate of the catalog GPU name, in
// FLOP/s; false when the table has none.
func matmulRate(name string) (float64, bool) {
	rates, err := matmulRates()
	if err != nil {
		panic(fmt.Sprintf("perf: embedded matmul rates: %v", err))
	}
	r, ok := rates[name]
	return r, ok
}

// measuredComputeRatio is how much faster dst's tensor cores are than
// src's: the ratio of their dense peaks (FP8's when fp8 and both have
// one, else BF16's), times the ratio of the fractions of their BF16 peaks
// the measured matmul rates reach where both parts have one. FP8 GEMMs
// take the BF16 fractions [assumption: a power cap slows both; the table
// has no FP8 rates for these parts].
func measuredComputeRatio(src, dst GPU, fp8 bool) float64 {
	ratio := dst.BF16FLOPS / src.BF16FLOPS
	if fp8 && src.FP8FLOPS > 0 && dst.FP8FLOPS > 0 {
		ratio = dst.FP8FLOPS / src.FP8FLOPS
	}
	rs, okSrc := matmulRate(src.Name)
	rd, okDst := matmulRate(dst.Name)
	if okSrc && okDst {
		ratio *= (rd / dst.BF16FLOPS) / (rs / src.BF16FLOPS)
	}
	return ratio
}

// matmulRatesNote names the two rates measuredComputeRatio uses for a
// derivation from src to dst ("L4 70.89, L40S 269.15 TFLOP/s"); empty when
// either part has none.
func matmulRatesNote(src, dst GPU) string {
	rs, okSrc := matmulRate(src.Name)
	rd, okDst := matmulRate(dst.Name)
	if !okSrc || !okDst || src.Name == dst.Name {
		return ""
	}
	return fmt.Sprintf("%s %.2f, %s %.2f TFLOP/s", dst.Name, rd/tf, src.Name, rs/tf)
}
