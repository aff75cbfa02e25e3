// Package mix holds splitmix64's mixing step, the one cheap bijective hash
// the engine's block hashes and serve's seeded text, ids and faults share.
package mix

// golden is splitmix64's increment, 2^64 divided by the golden ratio.
const golden = 0x9e3779b97f4a7c15

// Finalize is splitmix64's finalizer: every input bit affects every output
// bit, and distinct inputs give distinct outputs.
func Finalize(x uint64) uint64 {
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// SplitMix64 is one splitmix64 output for state x: the finalizer of x plus
// the golden-ratio increment, so that x = 0 does not map to 0.
func SplitMix64(x uint64) uint64 { return Finalize(x + golden) }
