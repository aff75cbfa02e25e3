package engine

import "math/bits"

// hashTable maps block hashes to block ids, at most one entry per block.
// It doubles when half full and never shrinks; linear probing with
// backward-shift deletion leaves no tombstones, so lookups stay short under
// the constant insert/evict churn of a full prefix cache (Go's map slowed
// down here). Key 0 marks an empty slot; block hashes are never 0.
type hashTable struct {
	slots []tableSlot
	mask  uint64
	shift uint
	n     int
}

type tableSlot struct {
	key uint64
	val int32
}

// newHashTable sizes the table for up to expected entries without growing.
func newHashTable(expected int) hashTable {
	size := 1 << bits.Len(uint(2*max(expected, 8))) // > 2·expected
	return hashTable{
		slots: make([]tableSlot, size),
		mask:  uint64(size - 1),
		shift: uint(64 - bits.Len(uint(size-1))),
	}
}

func (t *hashTable) grow() {
	old := t.slots
	*t = newHashTable(len(old) / 2) // twice the slots
	for _, sl := range old {
		if sl.key != 0 {
			t.put(sl.key, sl.val)
		}
	}
}

// slot is the home slot of h: Fibonacci hashing of the high bits, so
// structure in the low bits cannot cluster.
func (t *hashTable) slot(h uint64) uint64 {
	if t.shift >= 64 {
		return 0
	}
	return (h * goldenMix) >> t.shift
}

func (t *hashTable) get(h uint64) (int32, bool) {
	for i := t.slot(h); ; i = (i + 1) & t.mask {
		switch t.slots[i].key {
		case h:
			return t.slots[i].val, true
		case 0:
			return noBlock, false
		}
	}
}

// put inserts h unless it is present; it reports whether it inserted.
func (t *hashTable) put(h uint64, b int32) bool {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	for i := t.slot(h); ; i = (i + 1) & t.mask {
		switch t.slots[i].key {
		case h:
			return false
		case 0:
			t.slots[i] = tableSlot{h, b}
			t.n++
			return true
		}
	}
}

func (t *hashTable) del(h uint64) {
	i := t.slot(h)
	for t.slots[i].key != h {
		if t.slots[i].key == 0 {
			return
		}
		i = (i + 1) & t.mask
	}
	// Backward-shift: pull later entries of the probe run into the hole
	// when their home slot does not lie after it.
	for j := (i + 1) & t.mask; t.slots[j].key != 0; j = (j + 1) & t.mask {
		home := t.slot(t.slots[j].key)
		if (j-home)&t.mask >= (j-i)&t.mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i].key = 0
	t.n--
}

func (t *hashTable) clear() {
	clear(t.slots)
	t.n = 0
}
