package engine

import "strconv"

// passHook records what each scheduling pass did, in the terms vLLM's
// scheduler reports them, so the differential oracle test can compare the
// engine with vLLM's own scheduler step by step. It is nil outside tests.
type passHook struct {
	passes   []passRecord
	current  passRecord
	rejected int // len(step.Rejected) when the pass started
}

type passRecord struct {
	Scheduled [][2]int // request ID and tokens (V0: charged to the budget)
	Preempted []string // "id:mode" in preemption order
	SwappedIn []int
	Hits      [][2]int // V1: request ID, prefix-cache hit tokens at its first admission
	Ignored   []int
	FreeGPU   int
	FreeCPU   int
	Died      string
}

func (h *passHook) preempted(s *sequence, mode string) {
	name := "recompute"
	if mode == "PreemptionMode.SWAP" {
		name = "swap"
	}
	h.current.Preempted = append(h.current.Preempted, strconv.FormatUint(s.id, 10)+":"+name)
}

func (h *passHook) hit(s *sequence, tokens int) {
	h.current.Hits = append(h.current.Hits, [2]int{int(s.id), tokens})
}

func (h *passHook) swappedIn(s *sequence) {
	h.current.SwappedIn = append(h.current.SwappedIn, int(s.id))
}

// endPass snapshots the finished pass and starts the next one.
func (h *passHook) endPass(e *Engine) {
	rec := h.current
	h.current = passRecord{}
	if e.err != nil {
		rec.Died = e.err.Error()
		h.passes = append(h.passes, rec)
		return
	}
	for _, en := range e.cur.entries {
		tokens := en.tokens
		if e.cfg.Version == V0 {
			tokens = en.charged
		}
		rec.Scheduled = append(rec.Scheduled, [2]int{int(en.s.id), int(tokens)})
	}
	for _, r := range e.cur.Rejected[h.rejected:] {
		rec.Ignored = append(rec.Ignored, int(r.ID))
	}
	h.rejected = len(e.cur.Rejected)
	rec.FreeGPU = e.kv.free
	rec.FreeCPU = e.cfg.NumCPUBlocks - e.cpuUsed
	h.passes = append(h.passes, rec)
}
