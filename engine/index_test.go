package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The ID index must agree with a map whatever order IDs come in: in order,
// with gaps, out of order, or with a request that never leaves (which
// stops the window from sliding until it spills to the map).
func TestSeqIndexMatchesMap(t *testing.T) {
	tests := []struct {
		name string
		next func(rng *rand.Rand, last uint64) uint64
		// stuck keeps the first request until the end.
		stuck bool
	}{
		{"in order", func(_ *rand.Rand, last uint64) uint64 { return last + 1 }, false},
		{"gaps", func(rng *rand.Rand, last uint64) uint64 { return last + 1 + uint64(rng.IntN(5)) }, false},
		{"far jumps", func(rng *rand.Rand, last uint64) uint64 { return last + 1 + uint64(rng.IntN(3))*windowGap }, false},
		{"out of order", func(rng *rand.Rand, last uint64) uint64 { return rng.Uint64N(1 << 40) }, false},
		{"one stuck", func(_ *rand.Rand, last uint64) uint64 { return last + 1 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			var x seqIndex
			ref := map[uint64]*sequence{}
			var live []uint64
			var id uint64
			for op := range 60000 {
				if rng.IntN(2) == 0 || len(live) < 40 {
					id = tt.next(rng, id)
					if ref[id] != nil {
						continue
					}
					s := &sequence{id: id}
					x.put(id, s)
					ref[id] = s
					live = append(live, id)
				} else {
					first := 0
					if tt.stuck {
						first = 1
					}
					i := first + rng.IntN(min(len(live)-first, 8)) // mostly the oldest, as requests finish
					x.del(live[i])
					delete(ref, live[i])
					live = slices.Delete(live, i, i+1)
				}
				if op%101 != 0 {
					continue
				}
				if x.len() != len(ref) {
					t.Fatalf("op %d: len %d, map holds %d", op, x.len(), len(ref))
				}
				for k, s := range ref {
					if x.get(k) != s {
						t.Fatalf("op %d: get(%d) lost", op, k)
					}
				}
				if x.get(id+1) != nil {
					t.Fatalf("op %d: get(%d) found an ID never put", op, id+1)
				}
				if all := x.all(nil); len(all) != len(ref) {
					t.Fatalf("op %d: all gives %d, map holds %d", op, len(all), len(ref))
				}
			}
			if tt.stuck && len(x.window)-x.head > 2*x.len()+8*windowGap {
				t.Fatalf("window spans %d IDs for %d requests", len(x.window)-x.head, x.len())
			}
		})
	}
}
