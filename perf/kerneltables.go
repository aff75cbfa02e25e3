package perf

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Measured kernel tables (kerneltables/*.txt): latencies of GEMMs,
// attention kernels and collectives on real GPUs at grid points, reduced by
// tools/kernel-tables from aiconfigurator's and Vidur's public databases.
// doc.go ("Kernel tables") cites each and states the interpolation rule.

//go:embed kerneltables/*.txt
var kernelTableFiles embed.FS

// kernelTable is one embedded table: a dense grid of latencies in seconds.
type kernelTable struct {
	file   string
	kind   string
	gpu    string
	header map[string]string
	axes   []tableAxis
	values []float64 // seconds; last axis fastest
	logv   []float64 // their natural logs, which interpolation reads
}

// tableAxis is one grid dimension. Values are ascending; logs caches their
// natural logs, the coordinates interpolation works in.
type tableAxis struct {
	name   string
	values []float64
	logs   []float64
	// beyond says how the table continues past its last value:
	// proportionally (time ∝ the coordinate, as for more tokens, bytes or
	// batch) or held (a rank count, a head count per GPU).
	proportional bool
}

// proportionalAxes are the axes along which work grows linearly past the
// measured range; every other axis holds its last value.
var proportionalAxes = map[string]bool{
	"m": true, "n": true, "k": true, "nk": true, "batch": true, "bytes": true, "context": true, "heads": true, "kv_heads": true,
	"tokens": true, "elements": true,
}

// fillAxes are the axes along which an unmeasured cell is filled from its
// nearest measured neighbour, scaled by the ratio of the coordinates (the
// generator marks such cells "-": prefill batches beyond the collector's
// memory, long decode contexts at large batches, the largest GEMMs at
// M ≤ 16), tried in order.
var fillAxes = map[string][]string{
	"gemm": {"k", "n"}, "gemm-nk": {"nk"}, "attention-prefill": {"batch", "heads"},
	"attention-decode": {"batch", "kv_heads", "context"},
	"nccl-all_reduce":  {"bytes"}, "nccl-all_gather": {"bytes"}, "custom-allreduce": {"bytes"},
	"moe": {"tp"}, "moe-ep": {"ep"}, "mla-decode": {"batch", "context"},
}

// categoricalAxes index measured cases rather than measure a quantity (a
// fused-MoE table's expert shapes): read at their grid values only, never
// between them.
var categoricalAxes = map[string]bool{"shape": true}

// sharedAxes are axes along which work is divided rather than grown: a
// cell filled from a neighbour on one scales by the inverse ratio (the
// fused MoE kernel at twice the TP size has half of each expert per GPU,
// at twice the EP size half the experts).
var sharedAxes = map[string]bool{"tp": true, "ep": true}

// kernelCatalog is every embedded table, parsed once.
type kernelCatalog struct {
	tables map[string]*kernelTable // by file name
}

var loadKernelCatalog = sync.OnceValues(func() (*kernelCatalog, error) {
	entries, err := kernelTableFiles.ReadDir("kerneltables")
	if err != nil {
		return nil, err
	}
	c := &kernelCatalog{tables: map[string]*kernelTable{}}
	for _, e := range entries {
		data, err := kernelTableFiles.ReadFile(path.Join("kerneltables", e.Name()))
		if err != nil {
			return nil, err
		}
		t, err := parseKernelTable(e.Name(), data)
		if err != nil {
			return nil, err
		}
		c.tables[e.Name()] = t
	}
	return c, nil
})

// kernelTables is the parsed catalog; the embedded files are tested, so a
// parse error is a build defect and panics here rather than in a step.
func kernelTables() *kernelCatalog {
	c, err := loadKernelCatalog()
	if err != nil {
		panic(fmt.Sprintf("perf: embedded kernel tables: %v", err))
	}
	return c
}

// find returns the table of a kind for a GPU (and dtype for GEMMs), or nil.
func (c *kernelCatalog) find(kind, gpu, dtype string) *kernelTable {
	for _, t := range c.tables {
		if t.gpu == gpu && t.kind == kind && (dtype == "" || t.header["dtype"] == dtype) {
			return t
		}
	}
	return nil
}

// parseKernelTable reads the format tools/kernel-tables writes.
func parseKernelTable(name string, data []byte) (*kernelTable, error) {
	fail := func(line int, format string, args ...any) (*kernelTable, error) {
		return nil, fmt.Errorf("kernel table %s line %d: %s", name, line, fmt.Sprintf(format, args...))
	}
	t := &kernelTable{file: name, header: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	line, inValues := 0, false
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		switch {
		case text == "" || strings.HasPrefix(text, "#"):
		case inValues:
			for _, f := range strings.Fields(text) {
				if f == "-" {
					t.values = append(t.values, math.NaN())
					continue
				}
				v, err := strconv.ParseFloat(f, 64)
				if err != nil || !(v > 0) {
					return fail(line, "value %q is not a positive number or -", f)
				}
				t.values = append(t.values, v*1e-6) // microseconds
			}
		case strings.HasPrefix(text, "axis "):
			f := strings.Fields(text)
			if len(f) < 4 {
				return fail(line, "an axis needs a name and at least two values")
			}
			a := tableAxis{name: f[1], proportional: proportionalAxes[f[1]]}
			for _, s := range f[2:] {
				v, err := strconv.ParseFloat(s, 64)
				if err != nil || !(v > 0) || (len(a.values) > 0 && v <= a.values[len(a.values)-1]) {
					return fail(line, "axis %s: %q is not a positive value above the previous one", a.name, s)
				}
				a.values = append(a.values, v)
				a.logs = append(a.logs, math.Log(v))
			}
			t.axes = append(t.axes, a)
		case text == "values":
			inValues = true
		default:
			k, v, ok := strings.Cut(text, ":")
			if !ok {
				return fail(line, "%q is neither a header (key: value), an axis nor a value row", text)
			}
			t.header[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("kernel table %s: %w", name, err)
	}
	t.kind, t.gpu = t.header["kind"], t.header["gpu"]
	if t.kind == "" || t.gpu == "" || t.header["source"] == "" || t.header["license"] == "" {
		return nil, fmt.Errorf("kernel table %s: the header must give kind, gpu, source and license", name)
	}
	if t.header["unit"] != "microseconds" {
		return nil, fmt.Errorf("kernel table %s: unit %q; want microseconds", name, t.header["unit"])
	}
	n := 1
	for _, a := range t.axes {
		n *= len(a.values)
	}
	if len(t.axes) == 0 || len(t.values) != n {
		return nil, fmt.Errorf("kernel table %s: %d values for a grid of %d cells", name, len(t.values), n)
	}
	if err := t.fill(); err != nil {
		return nil, err
	}
	t.takeLogs()
	return t, nil
}

func (t *kernelTable) takeLogs() {
	t.logv = make([]float64, len(t.values))
	for i, v := range t.values {
		t.logv[i] = math.Log(v)
	}
}

// fill gives every unmeasured cell the time of its nearest measured
// neighbour along the first of the kind's fill axes that has one, scaled
// by the coordinates' ratio.
func (t *kernelTable) fill() error {
	var dims []int
	for _, name := range fillAxes[t.kind] {
		if d := slices.IndexFunc(t.axes, func(a tableAxis) bool { return a.name == name }); d >= 0 {
			dims = append(dims, d)
		}
	}
	idx := make([]int, len(t.axes))
	src := slices.Clone(t.values)
	for o, v := range src {
		if !math.IsNaN(v) {
			continue
		}
		filled := false
		for _, d := range dims {
			t.unflatten(o, idx)
			at := idx[d]
			best, bestDist := -1, 0
			for j := range t.axes[d].values {
				idx[d] = j
				if w := src[t.offset(idx)]; !math.IsNaN(w) {
					if dist := abs(j - at); best < 0 || dist < bestDist {
						best, bestDist = j, dist
					}
				}
			}
			if best >= 0 {
				idx[d] = best
				ratio := t.axes[d].values[at] / t.axes[d].values[best]
				if sharedAxes[t.axes[d].name] {
					ratio = 1 / ratio
				}
				t.values[o] = src[t.offset(idx)] * ratio
				filled = true
				break
			}
		}
		if !filled {
			return fmt.Errorf("kernel table %s: cell %d is unmeasured and has no measured neighbour along %v", t.file, o, fillAxes[t.kind])
		}
	}
	return nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func (t *kernelTable) offset(idx []int) int {
	o := 0
	for i, a := range t.axes {
		o = o*len(a.values) + idx[i]
	}
	return o
}

func (t *kernelTable) unflatten(o int, idx []int) {
	for i := len(t.axes) - 1; i >= 0; i-- {
		n := len(t.axes[i].values)
		idx[i] = o % n
		o /= n
	}
}

// bracket finds where x falls on an axis: the lower grid index, the
// interpolation weight of the upper one (in log x), and a factor for
// coordinates past the last value (x/last on proportional axes). Below the
// first value the first is held: kernels do not get faster than their
// smallest measured launch.
func (a *tableAxis) bracket(x float64) (lo int, w, beyond float64) {
	n := len(a.values)
	if n == 1 || !(x > a.values[0]) {
		return 0, 0, 1
	}
	if x >= a.values[n-1] {
		if a.proportional {
			beyond = x / a.values[n-1]
		} else {
			beyond = 1
		}
		return n - 2, 1, beyond
	}
	i := sort2(a.values, x)
	lx := math.Log(x)
	return i, (lx - a.logs[i]) / (a.logs[i+1] - a.logs[i]), 1
}

// sort2 is the index i with values[i] ≤ x < values[i+1] (values ascending,
// x inside the range): a short linear scan, as tables have ≤ 25 points.
func sort2(values []float64, x float64) int {
	for i := 1; i < len(values); i++ {
		if x < values[i] {
			return i - 1
		}
	}
	return len(values) - 2
}

// at interpolates the table at x (one coordinate per axis): multilinear in
// the logs of the coordinates and of the time, which is exact for power
// laws and so for the grids' powers of two; past the last grid value time
// grows in proportion on proportional axes and is held on the others.
func (t *kernelTable) at(x ...float64) float64 {
	switch len(t.axes) {
	case 2:
		return t.at2(x[0], x[1])
	case 3:
		return t.at3(x[0], x[1], x[2])
	}
	panic("perf: kernel tables have two or three axes")
}

func (t *kernelTable) at2(x0, x1 float64) float64 {
	a, b := &t.axes[0], &t.axes[1]
	i, wi, si := a.bracket(x0)
	j, wj, sj := b.bracket(x1)
	nb := len(b.values)
	v := func(i, j int) float64 { return t.logv[i*nb+j] }
	l := (1-wi)*((1-wj)*v(i, j)+wj*v(i, j+1)) + wi*((1-wj)*v(i+1, j)+wj*v(i+1, j+1))
	return math.Exp(l) * si * sj
}

func (t *kernelTable) at3(x0, x1, x2 float64) float64 {
	a, b, c := &t.axes[0], &t.axes[1], &t.axes[2]
	i, wi, si := a.bracket(x0)
	j, wj, sj := b.bracket(x1)
	k, wk, sk := c.bracket(x2)
	nb, nc := len(b.values), len(c.values)
	v := func(i, j, k int) float64 { return t.logv[(i*nb+j)*nc+k] }
	plane := func(i int) float64 {
		return (1-wj)*((1-wk)*v(i, j, k)+wk*v(i, j, k+1)) + wj*((1-wk)*v(i, j+1, k)+wk*v(i, j+1, k+1))
	}
	return math.Exp((1-wi)*plane(i)+wi*plane(i+1)) * si * sj * sk
}
