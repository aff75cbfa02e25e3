package engine

import "math/bits"

// hashTable maps block hashes to block ids, at most one entry per block.
// It doubles when half full and never shrinks; linear probing with
// backward-shift deletion leaves no tombstones, so lookups stay short under
// the constant insert/evict churn of a full prefix cache (Go's map slowed
// down here). A slot packs a 32-bit fingerprint of the hash with the block
// id: 8 bytes instead of 16 keeps more of a full cache's table in the CPU
// caches, where every insert and eviction probes it at a random place. A
// fingerprint match is confirmed against the full hash in the block's
// meta, which lookups read next anyway.
type hashTable struct {
	slots []uint64 // fingerprint<<32 | block+1; 0: empty
	mask  uint32
	shift uint // a fingerprint's home slot is fp >> shift
	n     int
}

// fingerprint is the top half of h's Fibonacci product: its high bits pick
// the home slot, so structure in the low bits of h cannot cluster.
func fingerprint(h uint64) uint32 { return uint32((h * goldenMix) >> 32) }

func packSlot(fp uint32, b int32) uint64 { return uint64(fp)<<32 | uint64(uint32(b+1)) }

func slotBlock(sl uint64) int32 { return int32(uint32(sl)) - 1 }

// newHashTable sizes the table for up to expected entries without growing.
func newHashTable(expected int) hashTable {
	size := 1 << bits.Len(uint(2*max(expected, 8))) // > 2·expected
	return hashTable{
		slots: make([]uint64, size),
		mask:  uint32(size - 1),
		shift: uint(32 - bits.Len(uint(size-1))),
	}
}

func (t *hashTable) home(fp uint32) uint32 { return fp >> t.shift }

func slotFingerprint(sl uint64) uint32 { return uint32(sl >> 32) }

func (t *hashTable) grow() {
	old := t.slots
	*t = newHashTable(len(old) / 2) // twice the slots
	for _, sl := range old {
		if sl != 0 {
			i := t.home(slotFingerprint(sl))
			for t.slots[i] != 0 {
				i = (i + 1) & t.mask
			}
			t.slots[i] = sl
			t.n++
		}
	}
}

// get finds the block holding hash h; meta holds every entry's full hash.
func (t *hashTable) get(h uint64, meta []blockMeta) (int32, bool) {
	fp := fingerprint(h)
	for i := t.home(fp); ; i = (i + 1) & t.mask {
		sl := t.slots[i]
		if sl == 0 {
			return noBlock, false
		}
		if slotFingerprint(sl) == fp && meta[slotBlock(sl)].hash == h {
			return slotBlock(sl), true
		}
	}
}

// put maps h to b unless h is present; it reports whether it inserted.
func (t *hashTable) put(h uint64, b int32, meta []blockMeta) bool {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	fp := fingerprint(h)
	for i := t.home(fp); ; i = (i + 1) & t.mask {
		sl := t.slots[i]
		if sl == 0 {
			t.slots[i] = packSlot(fp, b)
			t.n++
			return true
		}
		if slotFingerprint(sl) == fp && meta[slotBlock(sl)].hash == h {
			return false
		}
	}
}

// del removes the entry mapping h to b, if there is one.
func (t *hashTable) del(h uint64, b int32) {
	fp := fingerprint(h)
	want := packSlot(fp, b)
	i := t.home(fp)
	for t.slots[i] != want {
		if t.slots[i] == 0 {
			return
		}
		i = (i + 1) & t.mask
	}
	// Backward-shift: pull later entries of the probe run into the hole
	// when their home slot does not lie after it.
	for j := (i + 1) & t.mask; t.slots[j] != 0; j = (j + 1) & t.mask {
		if (j-t.home(slotFingerprint(t.slots[j])))&t.mask >= (j-i)&t.mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = 0
	t.n--
}

func (t *hashTable) clear() {
	clear(t.slots)
	t.n = 0
}
