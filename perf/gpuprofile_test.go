package perf

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// gpuProfileDir is this project's own measurement of one H100 SXM with
// tools/gpu-profile (PyTorch's cuBLAS GEMMs and FlashAttention, random
// weights; env.tsv there names the card, driver and date). The tests below
// hold the imported tables and the step model against it.
const gpuProfileDir = "testdata/gpu-profile/h100-sxm-2026-11-27"

// profileRows reads one of the profile's TSV files as rows keyed by its
// header.
func profileRows(t *testing.T, name string) []map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(gpuProfileDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var header []string
	var rows []map[string]string
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if header == nil {
			header = fields
			continue
		}
		if len(fields) != len(header) {
			t.Fatalf("%s: %d fields, header has %d: %q", name, len(fields), len(header), sc.Text())
		}
		row := map[string]string{}
		for i, h := range header {
			row[h] = fields[i]
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no rows", name)
	}
	return rows
}

func num(t *testing.T, row map[string]string, key string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(row[key], 64)
	if err != nil {
		t.Fatalf("column %s: %v", key, err)
	}
	return v
}

// ratioStats are a set of model/measured ratios: their median, and the
// median and share within 15% of the absolute log error.
type ratioStats struct {
	n               int
	median, within  float64
	medianAbsPctErr float64
}

func statsOf(ratios []float64) ratioStats {
	s := slices.Clone(ratios)
	slices.Sort(s)
	abs := make([]float64, len(s))
	within := 0
	for i, r := range s {
		abs[i] = math.Abs(r - 1)
		if abs[i] <= 0.15 {
			within++
		}
	}
	slices.Sort(abs)
	return ratioStats{n: len(s), median: medianOf(s), medianAbsPctErr: 100 * medianOf(abs), within: float64(within) / float64(len(s))}
}

func medianOf(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func (s ratioStats) String() string {
	return fmt.Sprintf("n %3d  ratio to measured: median %.3f, median |error| %5.1f%%, within 15%%: %3.0f%%", s.n, s.median, s.medianAbsPctErr, 100*s.within)
}

// TestImportedH100GEMMTableMatchesProfile: aiconfigurator's H100 GEMM
// table (vLLM 0.14's default bf16 kernels) against cuBLAS through PyTorch on
// this project's own H100, at the catalog models' shapes and the table's
// grid, by M band.
func TestImportedH100GEMMTableMatchesProfile(t *testing.T) {
	table := kernelTables().find("gemm", "H100-SXM", "bf16")
	bands := []struct {
		name    string
		lo, hi  float64
		maxMedE float64 // the band's median |error| may not exceed this (%)
	}{
		{"M 1-16 (decode, weight-bound)", 1, 16, 10},
		{"M 32-128", 32, 128, 10},
		{"M 192-512", 192, 512, 10},
		{"M 768-2048", 768, 2048, 10},
		{"M 4096-8192 (prefill)", 4096, 8192, 10},
	}
	byBand := make([][]float64, len(bands))
	for _, row := range profileRows(t, "gemm.tsv") {
		m, n, k := num(t, row, "m"), num(t, row, "n"), num(t, row, "k")
		if n > 65536 || k > 65536 {
			continue // past the table's grid: extrapolated, not compared
		}
		ratio := table.at(m, n, k) * 1e6 / num(t, row, "us")
		for i, b := range bands {
			if m >= b.lo && m <= b.hi {
				byBand[i] = append(byBand[i], ratio)
			}
		}
	}
	for i, b := range bands {
		s := statsOf(byBand[i])
		t.Logf("%-30s %v", b.name, s)
		if s.medianAbsPctErr > b.maxMedE {
			t.Errorf("%s: the imported table is %.1f%% off the profile (median), more than %.0f%%", b.name, s.medianAbsPctErr, b.maxMedE)
		}
	}
}

// TestImportedH100AttentionTablesMatchProfile: aiconfigurator's H100
// attention tables (vLLM 0.14's FlashAttention) against PyTorch's
// FlashAttention on this project's H100, prefill by (prompt, batch, query
// heads with 8 KV heads), decode by (context, batch) at 8 KV heads of 4
// query heads each.
func TestImportedH100AttentionTablesMatchProfile(t *testing.T) {
	cat := kernelTables()
	prefill, decode := cat.find("attention-prefill", "H100-SXM", ""), cat.find("attention-decode", "H100-SXM", "")
	var short, long, dec []float64
	for _, row := range profileRows(t, "attention-prefill.tsv") {
		heads := num(t, row, "heads")
		if heads != 32 && heads != 64 { // the table's grid: 8 KV heads for 32 or 64 query heads
			continue
		}
		isl := num(t, row, "isl")
		ratio := prefill.at(isl, num(t, row, "batch"), heads) * 1e6 / num(t, row, "us")
		if isl < 1024 {
			short = append(short, ratio)
		} else {
			long = append(long, ratio)
		}
	}
	for _, row := range profileRows(t, "attention-decode.tsv") {
		if num(t, row, "heads") != 32 {
			continue
		}
		dec = append(dec, decode.at(num(t, row, "context"), num(t, row, "batch"), 8)*1e6/num(t, row, "us"))
	}
	// vLLM 0.14 runs FlashAttention 3 on Hopper, PyTorch's SDPA
	// FlashAttention 2, which is 1.5-2× slower on long prompts: there the
	// table must be the faster one. Short prompts and decode are bound by
	// launch and memory, where the two should agree.
	for _, c := range []struct {
		name   string
		ratios []float64
		lo, hi float64 // bounds on the median ratio
	}{
		{"prefill, prompts < 1024", short, 0.8, 1.25},
		{"prefill, prompts ≥ 1024", long, 0.45, 0.8},
		{"decode", dec, 0.85, 1.15},
	} {
		s := statsOf(c.ratios)
		t.Logf("%-26s %v", c.name, s)
		if s.median < c.lo || s.median > c.hi {
			t.Errorf("%s: table/measured median %.3f, outside [%.2f, %.2f]", c.name, s.median, c.lo, c.hi)
		}
	}
}

// TestStepModelLayerMatchesProfile: the step model's GPU time for one
// decoder layer (linear layers, attention and the small kernels, from the
// tables as sim reads them) against a whole layer with random weights run
// in PyTorch on this project's H100 from a CUDA graph: a prompt alone, and
// decodes at a context.
func TestStepModelLayerMatchesProfile(t *testing.T) {
	models := map[string]*Roofline{}
	var pre, dec []float64
	for _, row := range profileRows(t, "layer.tsv") {
		name := row["model"]
		r := models[name]
		if r == nil {
			r = tabled(t, name, "H100", nil)
			models[name] = r
		}
		tokens, ctx := num(t, row, "tokens"), num(t, row, "context")
		var s StepShape
		var prefill, decode float64
		if row["mode"] == "prefill" {
			s = StepShape{PrefillTokens: int(tokens), Prefills: 1, PrefillsDone: 1, AttnPairs: int64(tokens * (tokens + 1) / 2), KVTokens: int64(tokens)}
			prefill = tokens
		} else {
			pairs := int64(tokens * ctx)
			s = StepShape{Decodes: int(tokens), AttnPairs: pairs, DecodeContext: pairs, KVTokens: pairs}
			decode = tokens
		}
		model := r.kern.layerSeconds(s, prefill, decode, tokens) / r.kern.layers * 1e6
		measured := num(t, row, "us_graph")
		t.Logf("%-13s %-7s tokens %5.0f context %5.0f: model %7.1f µs, measured %7.1f µs (%+.0f%%)", name, row["mode"], tokens, ctx, model, measured, 100*(model/measured-1))
		if row["mode"] == "prefill" {
			pre = append(pre, model/measured)
		} else {
			dec = append(dec, model/measured)
		}
		// PyTorch runs the layer's norms, rotary embedding, residual adds
		// and SiLU as separate unfused kernels (40-110 µs of a decode
		// layer here, 15-25% of a prefill layer) and prefill attention as
		// FlashAttention 2; vLLM fuses the small kernels and runs
		// FlashAttention 3. So the model must come out below the measured
		// layer, but not by more than that glue explains.
		if r := model / measured; r < 0.65 || r > 1 {
			t.Errorf("%s %s tokens %.0f context %.0f: model/measured %.2f, outside [0.65, 1]", name, row["mode"], tokens, ctx, r)
		}
	}
	for _, c := range []struct {
		name   string
		ratios []float64
	}{{"prefill", pre}, {"decode", dec}} {
		t.Logf("%-8s %v", c.name, statsOf(c.ratios))
	}
}
