package engine

import (
	"math/bits"
	"time"
)

// blockPool is the GPU block allocator. Without prefix caching only the
// count of free blocks matters, so no block identities are kept. With prefix
// caching every block has an identity, a reference count and maybe the hash
// of the full block it holds; free blocks that still hold a hash stay
// reusable until the allocator hands them out again (eviction):
//
//   - V1 (vllm/v1/core/block_pool.py): one free queue, initially every block
//     in order; allocation pops the head, a freed block goes to the tail, and
//     a request's blocks are freed tail-first so its last blocks are evicted
//     first. A prefix hit takes a block out of the middle of the queue.
//   - V0 (block_manager_v1 CachedBlockAllocator): blocks never used are
//     handed out first; after that the LRUEvictor evicts the free block with
//     the oldest last access, ties to the one hashing the most tokens.
type blockPool struct {
	total    int
	free     int // free blocks, including evictable cached ones
	reserved int // V1's null block: never free, never a request's
	caching  bool
	v0       bool

	// meta is one record per block, so touching a block costs one cache
	// line rather than one per field.
	meta  []blockMeta
	table hashTable

	// V1 free queue: a ring of the free blocks with the hash each held
	// when it was freed; positions [head, tail) are queued. A prefix hit
	// takes its block out by blanking the block's entry, skipped when it
	// reaches the head. Allocation reads only the ring, in order, and
	// writes the block's meta: with a linked list through meta (and with a
	// ring of bare ids) every allocation waited for a random meta line.
	ring       []freeEntry // len is a power of two, at least twice total
	head, tail uint32

	// V0 evictor.
	fresh      int // blocks [fresh, total) were never handed out
	lastAccess []time.Duration
	live       []uint64 // serial of a block's live evictor entry; 0: not in the evictor
	evictor    evictHeap
	serial     uint64

	// sharedBlocks counts the blocks that more than one request holds (a
	// prefix hit on a block in use), extraRefs their holders beyond the
	// first: a step's decodes read those blocks once from HBM and the rest
	// of the times from L2 when they fit (perf.StepShape.SharedDecodeContext).
	sharedBlocks, extraRefs int
}

type blockMeta struct {
	hash      uint64 // 0: the block is not in the cache table
	ref       int32
	freePos   uint32 // V1: ring position of the block's live free-queue entry
	numHashed int32  // V0: tokens the block's hash covers (evictor tie-break)
}

// freeEntry is a free-queue slot: a free block and its hash (0: none), or
// block noBlock once a prefix hit took the block back.
type freeEntry struct {
	hash  uint64
	block int32
}

const noBlock int32 = -1

func newBlockPool(total int, caching, v0 bool) blockPool {
	p := blockPool{total: total, free: total, caching: caching, v0: v0}
	p.initBlocks()
	if !v0 {
		// V1's BlockPool takes the first free block as its null_block (vLLM
		// PR #14097, 0.8.3): counted in num_gpu_blocks and usage, never
		// handed to a request.
		p.reserved = 1
		if caching {
			p.alloc()
		} else {
			p.free--
		}
	}
	return p
}

// usable is the number of blocks requests can hold.
func (p *blockPool) usable() int { return p.total - p.reserved }

func (p *blockPool) initBlocks() {
	if !p.caching {
		return
	}
	total := p.total
	p.meta = make([]blockMeta, total)
	// Most cached blocks are full prompt blocks; start small and let the
	// table grow with what is actually cached.
	p.table = newHashTable(min(total, 1<<14))
	if p.v0 {
		p.lastAccess = make([]time.Duration, total)
		p.live = make([]uint64, total)
		return
	}
	p.ring = make([]freeEntry, 1<<bits.Len(uint(2*total-1)))
	for b := range int32(total) {
		p.appendFree(b)
	}
}

func (p *blockPool) appendFree(b int32) {
	if p.tail-p.head == uint32(len(p.ring)) {
		p.compactRing()
	}
	p.ring[p.tail&uint32(len(p.ring)-1)] = freeEntry{p.meta[b].hash, b}
	p.meta[b].freePos = p.tail
	p.tail++
}

// popFree takes the entry at the head of the free queue (there is one).
func (p *blockPool) popFree() freeEntry {
	mask := uint32(len(p.ring) - 1)
	for {
		e := p.ring[p.head&mask]
		p.head++
		if e.block != noBlock {
			return e
		}
	}
}

// takeFree takes free block b out of the queue.
func (p *blockPool) takeFree(b int32) {
	p.ring[p.meta[b].freePos&uint32(len(p.ring)-1)].block = noBlock
}

// compactRing drops the blank entries of a full ring, keeping the order of
// the others. At most total entries hold a block, so a full ring frees at
// least half of itself.
func (p *blockPool) compactRing() {
	mask := uint32(len(p.ring) - 1)
	w := p.head
	for pos := p.head; pos != p.tail; pos++ {
		if e := p.ring[pos&mask]; e.block != noBlock {
			p.ring[w&mask] = e
			p.meta[e.block].freePos = w
			w++
		}
	}
	p.tail = w
}

// alloc hands out one free block (the caller checked p.free > 0), evicting
// the cached content it held.
func (p *blockPool) alloc() int32 {
	if !p.v0 {
		e := p.popFree()
		m := &p.meta[e.block]
		if e.hash != 0 {
			p.table.del(e.hash, e.block)
			m.hash = 0
		}
		m.ref = 1
		p.free--
		return e.block
	}
	var b int32
	if p.fresh < p.total {
		b = int32(p.fresh)
		p.fresh++
	} else {
		b = p.popEvictor()
	}
	m := &p.meta[b]
	if m.hash != 0 {
		p.table.del(m.hash, b)
		m.hash = 0
	}
	m.ref = 1
	p.free--
	return b
}

// touch takes a reference on a cached block found by a prefix hit.
func (p *blockPool) touch(b int32, now time.Duration) {
	switch p.meta[b].ref {
	case 0:
		if p.v0 {
			p.live[b] = 0
		} else {
			p.takeFree(b)
		}
		p.free--
	case 1:
		p.sharedBlocks++
		p.extraRefs++
	default:
		p.extraRefs++
	}
	p.meta[b].ref++
	if p.v0 {
		p.lastAccess[b] = max(p.lastAccess[b], now)
	}
}

// release drops one reference; the block becomes free (and evictable if it
// is cached) when none is left.
func (p *blockPool) release(b int32, lastAccess time.Duration, numHashed int32) {
	m := &p.meta[b]
	m.ref--
	if p.v0 {
		p.lastAccess[b] = max(p.lastAccess[b], lastAccess)
		m.numHashed = numHashed
	}
	if m.ref > 0 {
		p.extraRefs--
		if m.ref == 1 {
			p.sharedBlocks--
		}
		return
	}
	p.free++
	if !p.v0 {
		p.appendFree(b)
		return
	}
	p.serial++
	p.live[b] = p.serial
	p.evictor.push(evictEntry{last: p.lastAccess[b], numHashed: numHashed, block: b, serial: p.serial})
	if len(p.evictor) > 2*p.total+64 {
		p.compactEvictor()
	}
}

func (p *blockPool) popEvictor() int32 {
	for {
		e := p.evictor.pop()
		if p.live[e.block] == e.serial {
			p.live[e.block] = 0
			return e.block
		}
	}
}

// compactEvictor drops entries of blocks that were reused since they were
// freed, so the heap stays O(total).
func (p *blockPool) compactEvictor() {
	kept := p.evictor[:0]
	for _, e := range p.evictor {
		if p.live[e.block] == e.serial {
			kept = append(kept, e)
		}
	}
	p.evictor = kept
	p.evictor.init()
}

func (p *blockPool) lookup(h uint64) int32 {
	b, _ := p.table.get(h, p.meta)
	return b
}

// setHash registers a full block in the cache unless it already is, or
// another block already holds the same content.
func (p *blockPool) setHash(b int32, h uint64) {
	if p.meta[b].hash != 0 || !p.table.put(h, b, p.meta) {
		return
	}
	p.meta[b].hash = h
}

// reset empties the prefix cache; like vLLM it refuses while any block is
// held by a request.
func (p *blockPool) reset() bool {
	if p.free != p.usable() {
		return false
	}
	if !p.caching {
		return true
	}
	p.table.clear()
	for i := range p.meta {
		p.meta[i].hash = 0
	}
	for i := range p.ring {
		p.ring[i].hash = 0
	}
	return true
}

type evictEntry struct {
	last      time.Duration
	numHashed int32
	block     int32
	serial    uint64
}

// evictHeap is a binary min-heap ordered like vLLM's LRUEvictor: oldest
// access first, ties to the block hashing the most tokens, then free order.
type evictHeap []evictEntry

func (h evictHeap) less(i, j int) bool {
	a, b := h[i], h[j]
	if a.last != b.last {
		return a.last < b.last
	}
	if a.numHashed != b.numHashed {
		return a.numHashed > b.numHashed
	}
	return a.serial < b.serial
}

func (h *evictHeap) push(e evictEntry) {
	*h = append(*h, e)
	h.up(len(*h) - 1)
}

func (h *evictHeap) pop() evictEntry {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	h.down(0)
	return top
}

func (h evictHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (h evictHeap) down(i int) {
	n := len(h)
	for {
		smallest := i
		if l := 2*i + 1; l < n && h.less(l, smallest) {
			smallest = l
		}
		if r := 2*i + 2; r < n && h.less(r, smallest) {
			smallest = r
		}
		if smallest == i {
			return
		}
		h[i], h[smallest] = h[smallest], h[i]
		i = smallest
	}
}

func (h evictHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}
