package engine

import (
	"fmt"
)

// checkInvariants verifies the engine's bookkeeping from scratch: every
// live sequence is in exactly one queue matching its state, block counts and
// reference counts add up, the free structures hold exactly the free
// blocks, and the cache table points at blocks holding those hashes.
func (e *Engine) checkInvariants() error {
	for i, ve := range e.virt {
		if err := ve.checkInvariants(); err != nil {
			return fmt.Errorf("virtual engine %d: %w", i, err)
		}
	}
	if e.virt != nil {
		return nil
	}
	inflight := e.inflightTokens()
	seen := make(map[*sequence]bool, e.byID.len())
	queues := []struct {
		name  string
		q     *seqQueue
		state seqState
	}{{"waiting", &e.waiting, stateWaiting}, {"running", &e.running, stateRunning}, {"swapped", &e.swapped, stateSwapped}}
	for _, qu := range queues {
		for i := range qu.q.len() {
			s := qu.q.at(i)
			if s.state != qu.state {
				return fmt.Errorf("request %d in %s has state %d", s.id, qu.name, s.state)
			}
			if seen[s] {
				return fmt.Errorf("request %d is queued twice", s.id)
			}
			seen[s] = true
			if e.byID.get(s.id) != s {
				return fmt.Errorf("request %d in %s is not indexed by its ID", s.id, qu.name)
			}
		}
	}
	if len(seen) != e.byID.len() {
		return fmt.Errorf("%d requests are indexed but %d are queued", e.byID.len(), len(seen))
	}
	if e.running.len() > e.cfg.MaxNumSeqs {
		return fmt.Errorf("%d running > max_num_seqs %d", e.running.len(), e.cfg.MaxNumSeqs)
	}
	bs := e.cfg.BlockSize
	used, cpu := 0, 0
	refs := make([]int32, e.kv.total)
	for s := range seen {
		cpu += int(s.cpuBlocks)
		switch s.state {
		case stateWaiting:
			if s.gpuBlocks != 0 || s.cpuBlocks != 0 || s.computed != 0 {
				return fmt.Errorf("waiting request %d holds %d GPU / %d CPU blocks, %d computed tokens", s.id, s.gpuBlocks, s.cpuBlocks, s.computed)
			}
		case stateSwapped:
			if s.gpuBlocks != 0 || s.cpuBlocks == 0 {
				return fmt.Errorf("swapped request %d holds %d GPU / %d CPU blocks", s.id, s.gpuBlocks, s.cpuBlocks)
			}
		case stateRunning:
			if s.cpuBlocks != 0 {
				return fmt.Errorf("running request %d holds %d CPU blocks", s.id, s.cpuBlocks)
			}
			if s.gpuBlocks*bs < s.computed+s.inflight {
				return fmt.Errorf("running request %d has %d computed and %d in-flight tokens in %d blocks", s.id, s.computed, s.inflight, s.gpuBlocks)
			}
		}
		if s.inflight != inflight[s] {
			return fmt.Errorf("request %d counts %d tokens in flight, its pending steps hold %d", s.id, s.inflight, inflight[s])
		}
		if s.computed+s.inflight > s.len() {
			return fmt.Errorf("request %d has %d computed and %d in-flight of %d tokens", s.id, s.computed, s.inflight, s.len())
		}
		if s.generated >= s.maxTokens {
			return fmt.Errorf("request %d finished (%d/%d tokens) but is still queued", s.id, s.generated, s.maxTokens)
		}
		if s.computed > s.len() {
			return fmt.Errorf("request %d computed %d of %d tokens", s.id, s.computed, s.len())
		}
		used += s.gpuBlocks
		if e.kv.caching {
			if len(s.blocks) != s.gpuBlocks {
				return fmt.Errorf("request %d block table has %d blocks, count says %d", s.id, len(s.blocks), s.gpuBlocks)
			}
			for _, b := range s.blocks {
				refs[b]++
			}
		}
	}
	if cpu != e.cpuUsed || e.cpuUsed < 0 || e.cpuUsed > e.cfg.NumCPUBlocks {
		return fmt.Errorf("CPU blocks: %d held, %d counted, %d total", cpu, e.cpuUsed, e.cfg.NumCPUBlocks)
	}
	if e.kv.free < 0 || e.kv.free > e.kv.total {
		return fmt.Errorf("free GPU blocks %d outside [0, %d]", e.kv.free, e.kv.total)
	}
	if !e.kv.caching {
		if e.kv.total-e.kv.free != used+e.kv.reserved {
			return fmt.Errorf("GPU blocks: %d held by requests, %d reserved, %d not free", used, e.kv.reserved, e.kv.total-e.kv.free)
		}
		return nil
	}
	if e.kv.reserved > 0 {
		refs[0]++ // V1's null block, the first block handed out
	}
	return e.kv.check(refs)
}

// inflightTokens sums, per live sequence, the tokens charged to it by
// steps still pending.
func (e *Engine) inflightTokens() map[*sequence]int {
	out := make(map[*sequence]int)
	add := func(st *Step) {
		for _, en := range st.entries {
			if en.s.gen == en.gen {
				out[en.s] += int(en.charged)
			}
		}
	}
	if e.pending {
		add(&e.step)
	}
	for i := range e.batches {
		if e.batches[i].inFlight {
			add(&e.batches[i])
		}
	}
	return out
}

func (p *blockPool) check(refs []int32) error {
	free := 0
	for b := range p.total {
		if refs[b] != p.meta[b].ref {
			return fmt.Errorf("block %d: %d holders, ref count %d", b, refs[b], p.meta[b].ref)
		}
		if p.meta[b].ref == 0 {
			free++
		}
	}
	if free != p.free {
		return fmt.Errorf("%d blocks have no holder, %d counted free", free, p.free)
	}
	shared, extra := 0, 0
	for b := range p.total {
		if r := int(p.meta[b].ref); r > 1 {
			shared++
			extra += r - 1
		}
	}
	if shared != p.sharedBlocks || extra != p.extraRefs {
		return fmt.Errorf("%d blocks held more than once with %d extra holders, counted %d and %d", shared, extra, p.sharedBlocks, p.extraRefs)
	}
	if p.v0 {
		inEvictor := 0
		for b := range p.total {
			if p.live[b] != 0 {
				inEvictor++
				if p.meta[b].ref != 0 {
					return fmt.Errorf("block %d is in the evictor with ref count %d", b, p.meta[b].ref)
				}
			}
		}
		if inEvictor+(p.total-p.fresh) != p.free {
			return fmt.Errorf("evictor holds %d blocks, %d fresh, %d free", inEvictor, p.total-p.fresh, p.free)
		}
	} else {
		if p.tail-p.head > uint32(len(p.ring)) {
			return fmt.Errorf("free queue spans %d positions of a %d-entry ring", p.tail-p.head, len(p.ring))
		}
		queued := make([]int, p.total)
		n := 0
		for pos := p.head; pos != p.tail; pos++ {
			e := p.ring[pos&uint32(len(p.ring)-1)]
			if e.block == noBlock {
				continue
			}
			if m := p.meta[e.block]; m.freePos != pos || m.hash != e.hash {
				return fmt.Errorf("free-queue entry %d of block %d (hash %x) is not the block's (at %d, hash %x)", pos, e.block, e.hash, m.freePos, m.hash)
			}
			queued[e.block]++
			n++
		}
		for b := range p.total {
			if free := p.meta[b].ref == 0; free != (queued[b] == 1) || queued[b] > 1 {
				return fmt.Errorf("block %d with ref count %d is queued %d times", b, p.meta[b].ref, queued[b])
			}
		}
		if n != p.free {
			return fmt.Errorf("free queue holds %d blocks, %d counted free", n, p.free)
		}
	}
	entries := 0
	for _, slot := range p.table.slots {
		if slot == 0 {
			continue
		}
		entries++
		b := slotBlock(slot)
		h := p.meta[b].hash
		if h == 0 || fingerprint(h) != slotFingerprint(slot) {
			return fmt.Errorf("cache table maps fingerprint %x to block %d holding %x", slotFingerprint(slot), b, h)
		}
		if got, ok := p.table.get(h, p.meta); !ok || got != b {
			return fmt.Errorf("cache table entry %x is not reachable from its home slot", h)
		}
	}
	if entries != p.table.n {
		return fmt.Errorf("cache table holds %d entries, counts %d", entries, p.table.n)
	}
	for b := range p.total {
		if h := p.meta[b].hash; h != 0 {
			if got, ok := p.table.get(h, p.meta); !ok || got != int32(b) {
				return fmt.Errorf("block %d holds hash %x the table does not map to it", b, h)
			}
		}
	}
	return nil
}
