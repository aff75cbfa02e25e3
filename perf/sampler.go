package perf

import "sort"

// SamplerKernels is the GPU time of a sampler call, the sum of its
// kernels, measured on one GPU: Micros[v][r] microseconds for Rows[r]
// sampled rows of Vocabs[v] logits each.
type SamplerKernels struct {
	// MeasuredOn is the catalog name of the GPU the figures come from.
	MeasuredOn string
	Rows       []int
	Vocabs     []int
	Micros     [][]float64
}

// valid reports whether the grid is complete and ascending.
func (k SamplerKernels) valid() bool {
	if len(k.Rows) == 0 || len(k.Vocabs) == 0 || len(k.Micros) != len(k.Vocabs) {
		return false
	}
	for _, row := range k.Micros {
		if len(row) != len(k.Rows) {
			return false
		}
	}
	return sort.IntsAreSorted(k.Rows) && sort.IntsAreSorted(k.Vocabs)
}

// At is the time in microseconds for rows rows of vocab logits on the
// measuring GPU: linear between measured rows and vocabularies, held at
// the first row count, and in proportion to the cells beyond the last row
// count and outside the measured vocabularies (a bandwidth-bound sweep
// over rows × vocab cells). An incomplete grid (the zero value among
// them) counts no time.
func (k SamplerKernels) At(rows float64, vocab int) float64 {
	if !k.valid() {
		return 0
	}
	at := func(v int) float64 { return interpolateRows(k.Rows, k.Micros[v], rows) }
	n := len(k.Vocabs)
	switch {
	case vocab <= k.Vocabs[0]:
		return at(0) * float64(vocab) / float64(k.Vocabs[0])
	case vocab >= k.Vocabs[n-1]:
		return at(n-1) * float64(vocab) / float64(k.Vocabs[n-1])
	}
	i := sort.SearchInts(k.Vocabs, vocab)
	f := float64(vocab-k.Vocabs[i-1]) / float64(k.Vocabs[i]-k.Vocabs[i-1])
	return at(i-1) + f*(at(i)-at(i-1))
}

// interpolateRows is linearAt, in proportion to the rows past the last.
func interpolateRows(rows []int, micros []float64, x float64) float64 {
	if last := rows[len(rows)-1]; x >= float64(last) {
		return micros[len(rows)-1] * x / float64(last)
	}
	return linearAt(rows, micros, x)
}

// linearAt is ys at x, linear between the ascending knots xs and held
// beyond the first and the last.
func linearAt(xs []int, ys []float64, x float64) float64 {
	n := len(xs)
	switch {
	case x <= float64(xs[0]):
		return ys[0]
	case x >= float64(xs[n-1]):
		return ys[n-1]
	}
	i := sort.Search(n, func(i int) bool { return float64(xs[i]) >= x })
	f := (x - float64(xs[i-1])) / float64(xs[i]-xs[i-1])
	return ys[i-1] + f*(ys[i]-ys[i-1])
}

// newSamplerCurve is the deployment's sampler time in seconds by sampled
// rows in a step; nil when no sampler figures are set. On another GPU
// the measured sampler runs on rows stretched by the ratio of bandwidths
// (its kernels are element-wise passes and row reductions over the
// logits): a call at its launch floor keeps it, a bandwidth-bound one
// scales with the bandwidth, as the element-wise tables do.
func newSamplerCurve(d Deployment) *curve {
	k := d.SamplerKernels
	src, ok := measuredGPU(k.MeasuredOn)
	if !k.valid() || !ok || d.Model.Vocab <= 0 {
		return nil
	}
	g := d.GPU
	stretch := src.MemoryBandwidth / g.MemoryBandwidth
	if src.Name == g.Name {
		stretch = 1
	}
	scale := calibrated(g, false, 0, 1)
	maxRows := max(d.MaxNumSeqs, 1)
	xs := []float64{1} // then the measured row counts, ascending as valid() requires
	for _, r := range k.Rows {
		if x := float64(r); x > 1 && x/stretch > 1 {
			xs = append(xs, x/stretch)
		}
	}
	return newCurve(xs, func(rows float64) float64 {
		return k.At(rows*stretch, d.Model.Vocab) * 1e-6 * scale
	}).densify(maxRows)
}
