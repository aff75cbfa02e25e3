package perf

import (
	"math"
	"testing"
)

// A decode step whose sequences share a cached prefix reads the shared
// blocks from HBM once and the rest of the times from L2 while one
// layer's shared blocks fit in it: it lasts as long as the same step
// without those reads, in the tables (decode attention at the context the
// HBM reads leave) and in the roofline (fewer KV bytes); a share of them
// when the shared blocks outgrow L2, none on a GPU with no L2 recorded.
func TestSharedPrefixReadsFromL2(t *testing.T) {
	const decodes, ctx, prefix = 64, 800, 100
	base := func() StepShape {
		var s StepShape
		for range decodes {
			s.AddDecode(ctx)
		}
		return s
	}
	for _, tc := range []struct {
		name      string
		gpu       string
		noTables  bool
		prefixX   float64 // the shared blocks' footprint, in multiples of the prefix
		servedFor func(r *Roofline) float64
	}{
		{"tables, shared blocks fit L2", "H100", false, 1, func(*Roofline) float64 { return (decodes - 1) * prefix }},
		{"roofline, shared blocks fit L2", "H100", true, 1, func(*Roofline) float64 { return (decodes - 1) * prefix }},
		{"tables, shared blocks twice L2", "H100", false, 0, func(r *Roofline) float64 { return (decodes - 1) * prefix / 2 }},
		{"roofline on a GPU with no L2 recorded", "MI300X", true, 1, func(*Roofline) float64 { return 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tabled(t, "Llama-3-8B", tc.gpu, func(d *Deployment) { d.NoKernelTables = tc.noTables })
			if (r.kern == nil) != tc.noTables {
				t.Fatalf("kernel tables in use: %v, want %v", r.kern != nil, !tc.noTables)
			}
			shared := base()
			shared.SharedDecodeContext = (decodes - 1) * prefix
			shared.SharedPrefixTokens = prefix
			if tc.prefixX == 0 {
				// Sized so one layer's shared blocks are twice the L2.
				shared.SharedPrefixTokens = int64(math.Round(2 * r.l2Bytes / r.kvLayerTokenBytes))
			}
			served := tc.servedFor(r)
			if got := r.l2Served(shared); math.Abs(got-served) > 1e-6*math.Max(served, 1) {
				t.Fatalf("l2Served %.1f tokens, want %.1f", got, served)
			}
			// The same step without the served reads.
			fewer := base()
			fewer.DecodeContext -= int64(math.Round(served))
			fewer.KVTokens -= int64(math.Round(served))
			got, want, plain := r.StepTime(shared), r.StepTime(fewer), r.StepTime(base())
			if d := math.Abs(float64(got - want)); d > 0.001*float64(want) {
				t.Errorf("shared-prefix step %v, want %v (the step without %.0f HBM reads)", got, want, served)
			}
			if served > 0 && got >= plain {
				t.Errorf("shared-prefix step %v not shorter than the unshared %v", got, plain)
			}
		})
	}
}
