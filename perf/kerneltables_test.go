package perf

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestKernelTablesParse: every embedded table names its source commit and
// license, has a full grid of positive times after filling, and the
// catalog holds the tables the step model looks for.
func TestKernelTablesParse(t *testing.T) {
	cat := kernelTables()
	if len(cat.tables) < 30 {
		t.Fatalf("%d kernel tables embedded, want the 36 tools/kernel-tables writes", len(cat.tables))
	}
	for name, kt := range cat.tables {
		if !strings.Contains(kt.header["source"], "@") || !strings.Contains(kt.header["license"], "NOTICE") {
			t.Errorf("%s: source %q and license %q must name a commit and the NOTICE", name, kt.header["source"], kt.header["license"])
		}
		for i, v := range kt.values {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Fatalf("%s: cell %d is %v after filling", name, i, v)
			}
		}
	}
	for _, gpu := range []string{"H100-SXM", "H200", "A100-80GB", "L40S", "B200"} {
		for _, kind := range []string{"attention-prefill", "attention-decode", "nccl-all_reduce", "nccl-all_gather", "custom-allreduce"} {
			if cat.find(kind, gpu, "") == nil {
				t.Errorf("no %s table for %s", kind, gpu)
			}
		}
		if cat.find("gemm", gpu, "bf16") == nil {
			t.Errorf("no bf16 GEMM table for %s", gpu)
		}
	}
	if cat.find("gemm-nk", "A40", "bf16") == nil {
		t.Error("no A40 GEMM table")
	}
}

func TestParseKernelTableErrors(t *testing.T) {
	head := "kind: gemm-nk\ngpu: X\nsource: a@b\nlicense: see NOTICE\nunit: microseconds\n"
	tests := []struct{ name, text, want string }{
		{"no header", "axis m 1 2\naxis nk 1 2\nvalues\n1 2\n3 4\n", "header must give"},
		{"bad unit", strings.Replace(head, "microseconds", "ms", 1) + "axis m 1 2\naxis nk 1 2\nvalues\n1 2\n3 4\n", "unit"},
		{"short grid", head + "axis m 1 2\naxis nk 1 2\nvalues\n1 2\n3\n", "3 values for a grid of 4"},
		{"descending axis", head + "axis m 2 1\naxis nk 1 2\nvalues\n1 2\n3 4\n", "above the previous"},
		{"negative", head + "axis m 1 2\naxis nk 1 2\nvalues\n1 -2\n3 4\n", "positive"},
		{"all unmeasured", head + "axis m 1 2\naxis nk 1 2\nvalues\n- -\n- -\n", "no measured neighbour"},
		{"stray line", head + "hello\n", "neither a header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseKernelTable("x.txt", []byte(tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func FuzzParseKernelTable(f *testing.F) {
	data, err := kernelTableFiles.ReadFile("kerneltables/gemm-a40-bf16.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte("kind: gemm\ngpu: g\nsource: a@b\nlicense: NOTICE\nunit: microseconds\naxis m 1 2\naxis n 1 2\naxis k 1 2\nvalues\n1 - 3 4 5 6 7 8\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		kt, err := parseKernelTable("fuzz.txt", b)
		if err != nil {
			return
		}
		if len(kt.axes) == 2 || len(kt.axes) == 3 {
			x := make([]float64, len(kt.axes))
			for i, a := range kt.axes {
				x[i] = a.values[len(a.values)/2] * 1.3
			}
			if v := kt.at(x...); !(v > 0) {
				t.Fatalf("interpolated %v from a parsed table", v)
			}
		}
	})
}

// heldBackErrors holds back every interior grid point of a table in turn
// and predicts it from its neighbours along each axis (the log-log rule
// kernelTable.at applies), averaging the axes' predictions in log space;
// it returns the relative errors. Only measured cells are judged.
func heldBackErrors(kt *kernelTable, measured []bool) []float64 {
	var errs []float64
	idx := make([]int, len(kt.axes))
	for o, v := range kt.values {
		if !measured[o] {
			continue
		}
		kt.unflatten(o, idx)
		sum, n := 0.0, 0
		for d, a := range kt.axes {
			i := idx[d]
			// Axes of a few points (ranks 2, 4, 8; KV heads 1 to 8) are
			// not thinned: holding back one is a third of the axis.
			if i == 0 || i == len(a.values)-1 || len(a.values) < 5 || categoricalAxes[a.name] {
				continue
			}
			idx[d] = i - 1
			lo := kt.offset(idx)
			idx[d] = i + 1
			hi := kt.offset(idx)
			idx[d] = i
			if !measured[lo] || !measured[hi] {
				continue
			}
			w := (a.logs[i] - a.logs[i-1]) / (a.logs[i+1] - a.logs[i-1])
			sum += (1-w)*math.Log(kt.values[lo]) + w*math.Log(kt.values[hi])
			n++
		}
		if n > 0 {
			errs = append(errs, math.Abs(math.Exp(sum/float64(n))/v-1))
		}
	}
	slices.Sort(errs)
	return errs
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

// TestKernelTablesReproduceHeldBackPoints: each table predicts its own
// held-back points (every interior grid point in turn, from its
// neighbours). The median error must stay within 5% and seven points in
// ten within 10%; the distribution is logged (doc.go quotes it). The
// tails are the sources' noise: neighbouring cells that differ by more
// than any smooth curve allows (clock and power swings, most on L40S).
func TestKernelTablesReproduceHeldBackPoints(t *testing.T) {
	cat := kernelTables()
	names := make([]string, 0, len(cat.tables))
	for n := range cat.tables {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		kt := cat.tables[name]
		measured := measuredCells(t, name, len(kt.values))
		errs := heldBackErrors(kt, measured)
		if len(errs) < 10 {
			t.Errorf("%s: only %d held-back points", name, len(errs))
			continue
		}
		p50, p75, p90 := quantile(errs, 0.5), quantile(errs, 0.75), quantile(errs, 0.9)
		t.Logf("%-34s n=%4d  p50 %5.1f%%  p75 %5.1f%%  p90 %5.1f%%  max %6.1f%%", name, len(errs), 100*p50, 100*p75, 100*p90, 100*errs[len(errs)-1])
		if p70 := quantile(errs, 0.7); p50 > 0.05 || p70 > 0.10 {
			t.Errorf("%s: held-back error p50 %.1f%%, p70 %.1f%%; want ≤ 5%% and ≤ 10%%", name, 100*p50, 100*p70)
		}
	}
}

// measuredCells reads which cells of an embedded table the source measured
// (the "-" cells were filled at load time and are not judged).
func measuredCells(t *testing.T, name string, n int) []bool {
	t.Helper()
	data, err := kernelTableFiles.ReadFile("kerneltables/" + name)
	if err != nil {
		t.Fatal(err)
	}
	_, rows, _ := strings.Cut(string(data), "\nvalues\n")
	var out []bool
	for _, f := range strings.Fields(rows) {
		out = append(out, f != "-")
	}
	if len(out) != n {
		t.Fatalf("%s: %d cells in the file, %d parsed", name, len(out), n)
	}
	return out
}

// figureRows reads a tab-separated figures file from testdata/kernels.
func figureRows(t *testing.T, file string) []map[string]string {
	t.Helper()
	return tsvRows(t, filepath.Join("testdata", "kernels", file))
}

// tsvRows reads a tab-separated file with a header line as rows keyed by
// the header; lines starting with # are comments.
func tsvRows(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var head []string
	var rows []map[string]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if head == nil {
			head = cols
			continue
		}
		if len(cols) != len(head) {
			t.Fatalf("%s: %d fields, header has %d: %q", path, len(cols), len(head), line)
		}
		r := map[string]string{}
		for i, c := range cols {
			r[head[i]] = c
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no rows", path)
	}
	return rows
}

func figure(t *testing.T, r map[string]string, col string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(r[col], 64)
	if err != nil {
		t.Fatalf("column %s: %v", col, err)
	}
	return v
}

// TestGEMMTablesMatchVidur: aiconfigurator's GEMM tables (one database)
// predict the linear operators Vidur measured on its own A100 and H100
// (another) for six models at every TP size.
func TestGEMMTablesMatchVidur(t *testing.T) {
	cat := kernelTables()
	var errs []float64
	for _, r := range figureRows(t, "vidur-gemm.tsv") {
		gpu := map[string]string{"a100": "A100-80GB", "h100": "H100-SXM"}[r["gpu"]]
		m, n, k, us := figure(t, r, "m"), figure(t, r, "n"), figure(t, r, "k"), figure(t, r, "us")
		if m < 64 {
			continue // launch-bound: vidur's eager timings carry a host gap
		}
		got := cat.find("gemm", gpu, "bf16").at(m, n, k) * 1e6
		errs = append(errs, math.Abs(got/us-1))
	}
	slices.Sort(errs)
	t.Logf("%d operators, M ≥ 64: error p50 %.1f%%, p80 %.1f%%, max %.1f%%", len(errs), 100*quantile(errs, 0.5), 100*quantile(errs, 0.8), 100*errs[len(errs)-1])
	if quantile(errs, 0.5) > 0.15 {
		t.Errorf("median error %.1f%% against Vidur's operator times; want ≤ 15%%", 100*quantile(errs, 0.5))
	}
}

// TestInModelComputeRateMatchesVidur: inModelComputeRate is what Vidur's
// in-layer operator times say of aiconfigurator's isolated ones, on each
// GPU both measured: the median ratio of the table's time to Vidur's
// where the roofline's compute share is at least 0.8. Where it is at most
// 0.2 (the weight read decides) the ratio is the GPU's inModelWeightRate.
// The GEMM timer, which applies both, comes nearer Vidur's times than the
// bare table where the weight read decides, and from M = 256 up (H100
// keeps a gap at M = 256–1024, where the compute share is between the
// bands).
func TestInModelComputeRateMatchesVidur(t *testing.T) {
	cat := kernelTables()
	type bands struct{ compute, memory, memTimer, table, timer []float64 }
	byGPU := map[string]*bands{}
	for _, r := range figureRows(t, "vidur-gemm.tsv") {
		name := map[string]string{"a100": "A100-80GB", "h100": "H100-SXM"}[r["gpu"]]
		g, err := LookupGPU(name)
		if err != nil {
			t.Fatal(err)
		}
		m, n, k, us := figure(t, r, "m"), figure(t, r, "n"), figure(t, r, "k"), figure(t, r, "us")
		table := cat.find("gemm", name, "bf16")
		ratio := table.at(m, n, k) * 1e6 / us
		b := byGPU[name]
		if b == nil {
			b = &bands{}
			byGPU[name] = b
		}
		flops, bytes := 2*m*n*k, activationBytes*(m*k+m*n+n*k)
		c, mem := flops/g.BF16FLOPS, bytes/g.MemoryBandwidth
		switch share := c / (c + mem); {
		case share >= 0.8:
			b.compute = append(b.compute, ratio)
		case share <= 0.2:
			b.memory = append(b.memory, ratio)
			timer := &gemmTimer{table: table, src: g, dst: g, weightFactor: 1, isolated: true}
			b.memTimer = append(b.memTimer, timer.at(m, n, k)*1e6/us)
		}
		if m >= 256 {
			timer := &gemmTimer{table: table, src: g, dst: g, weightFactor: 1, isolated: true}
			b.table = append(b.table, ratio)
			b.timer = append(b.timer, timer.at(m, n, k)*1e6/us)
		}
	}
	if len(byGPU) != 2 {
		t.Fatalf("vidur-gemm.tsv covers %d GPUs; want A100 and H100", len(byGPU))
	}
	for _, name := range []string{"A100-80GB", "H100-SXM"} {
		b := byGPU[name]
		compute, memory := statsOf(b.compute).median, statsOf(b.memory).median
		table, timer := statsOf(b.table).median, statsOf(b.timer).median
		t.Logf("%s: table/Vidur %.3f compute-bound (%d ops), %.3f weight-bound (%d); at M ≥ 256 (%d) table/Vidur %.3f, timer/Vidur %.3f",
			name, compute, len(b.compute), memory, len(b.memory), len(b.timer), table, timer)
		if math.Abs(compute-inModelComputeRate) > 0.02 {
			t.Errorf("%s: compute-bound table/Vidur %.3f; inModelComputeRate is %.2f", name, compute, inModelComputeRate)
		}
		if math.Abs(memory-inModelWeightRate[name]) > 0.0015 {
			t.Errorf("%s: weight-bound table/Vidur %.3f; inModelWeightRate is %.3f", name, memory, inModelWeightRate[name])
		}
		if memTimer := statsOf(b.memTimer).median; math.Abs(memTimer-1) > 0.01 || math.Abs(memTimer-1) > math.Abs(memory-1) {
			t.Errorf("%s: weight-bound timer/Vidur %.3f, table/Vidur %.3f; want the timer within 1%% of 1 and no farther than the table", name, memTimer, memory)
		}
		if math.Abs(timer-1) > 0.08 || math.Abs(timer-1) >= math.Abs(table-1) {
			t.Errorf("%s: at M ≥ 256 timer/Vidur %.3f, table/Vidur %.3f; want the timer within 8%% of 1 and nearer than the table", name, timer, table)
		}
	}
}
