package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFreeQueueOrder drives V1's free-queue ring with random allocations,
// prefix hits (which take a free block out of the middle of the queue) and
// releases, and checks every allocation against a plain list: the blocks
// come out in vLLM's free-queue order however many stale entries the ring
// skips or compacts away.
func TestFreeQueueOrder(t *testing.T) {
	tests := []struct {
		name   string
		total  int
		hitP   float64 // chance a step is a prefix hit on a free block
		allocP float64 // chance it allocates; otherwise it releases
		steps  int
	}{
		{"one block", 2, 0.5, 0.2, 200},
		{"few hits", 16, 0.1, 0.45, 5000},
		{"mostly hits", 16, 0.8, 0.1, 5000},
		{"larger pool", 300, 0.5, 0.002, 50000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tt.total), 7))
			p := newBlockPool(tt.total, true, false)
			// want is the free queue as a list; the null block is held.
			want := make([]int32, 0, tt.total)
			for b := 1; b < tt.total; b++ {
				want = append(want, int32(b))
			}
			var held []int32
			compactions := 0
			for range tt.steps {
				before := p.tail
				switch r := rng.Float64(); {
				case r < tt.hitP && len(want) > 0:
					i := rng.IntN(len(want))
					p.touch(want[i], 0)
					held = append(held, want[i])
					want = slices.Delete(want, i, i+1)
				case r < tt.hitP+tt.allocP && len(want) > 0:
					got := p.alloc()
					if got != want[0] {
						t.Fatalf("alloc gave block %d, the queue's head is %d", got, want[0])
					}
					held = append(held, got)
					want = want[1:]
				case len(held) > 0:
					i := rng.IntN(len(held))
					b := held[i]
					held = slices.Delete(held, i, i+1)
					p.release(b, 0, 0)
					want = append(want, b)
					if p.tail <= before {
						compactions++
					}
				}
				if p.free != len(want) {
					t.Fatalf("%d blocks counted free, %d queued", p.free, len(want))
				}
			}
			if tt.hitP > tt.allocP && compactions == 0 {
				t.Errorf("the ring never compacted; the test does not exercise it")
			}
		})
	}
}
