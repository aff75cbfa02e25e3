package engine

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/servebench/servebench/perf"
)

type seqState uint8

const (
	stateFree seqState = iota
	stateWaiting
	stateRunning
	stateSwapped
	stateDone
)

// sequence is one request's scheduler state (vLLM's SequenceGroup with a
// single sequence, or V1's Request). Sequences are pooled; gen changes on
// every reuse so a Step can tell a recycled sequence from its own.
type sequence struct {
	// The fields every scheduled decode reads or writes come first, in one
	// cache line: each step touches every running sequence twice
	// (scheduling and completion), and with them spread over four lines
	// those touches missed the L1 cache. At 192 bytes a sequence starts on
	// a cache line, so that line is its first.
	gen      uint32
	state    seqState
	decoding bool // prefill done since the last (re)admission
	reported bool // first output sent
	// promptCached: every full prompt block is registered in the cache,
	// so fitsHeld need not read hashedBlocks. False is always safe.
	promptCached bool
	// lastToken is the Stats.Steps of the Complete that gave the latest
	// token, 0 before the first.
	lastToken int64
	promptLen int
	generated int
	computed  int // tokens whose KV is computed (num_computed_tokens)
	inflight  int // tokens scheduled in batches still in the pipeline (PP)
	maxTokens int
	gpuBlocks int

	id           uint64
	hashedBlocks int           // prefix caching: leading blocks already registered in the cache
	lastAccess   time.Duration // V0 evictor: last step that scheduled it
	arrival      time.Duration
	prompt       []int32

	// Prefix caching only.
	blocks []int32  // GPU block table
	hashes []uint64 // chained hashes of the leading full blocks

	hit       int32 // V0: prefix-cache hit tokens of the current admission
	remote    int32 // V1: leading prompt tokens a KV connector delivers at the first admission
	cpuBlocks int32
	chunk     int32 // V0: tokens scheduled in the current step
	cached    int32 // prefix-cache hit tokens at the first admission
	deferred  bool  // prompt comes from Config.PromptIDs when first hashed
	admitted  bool  // first admission done; cached is final
}

// hasPrompt reports that s's prompt IDs are known (now or on demand).
func (s *sequence) hasPrompt() bool { return s.prompt != nil || s.deferred }

// len is the number of tokens the sequence holds: prompt plus generated.
func (s *sequence) len() int { return s.promptLen + s.generated }

// Engine is vLLM's scheduler and KV-cache manager for one model replica.
type Engine struct {
	cfg      Config
	log      *slog.Logger
	kv       blockPool
	wmBlocks int
	cpuUsed  int

	byID                      seqIndex
	waiting, running, swapped seqQueue
	pool                      []*sequence

	step    Step
	cur     *Step // the step being scheduled: &step, or a batch slot with PP
	pending bool
	err     error
	now     time.Duration
	changed bool // the current scheduling pass preempted or rejected something
	stats   Stats

	// V0 _passed_delay state.
	prevTime          time.Duration
	prevPrompt        bool
	lastPromptLatency time.Duration
	// Waiting stays in Add order (preempted requests return to the front,
	// ahead of everything added after them), so while arrivals are added in
	// order the front holds the earliest arrival.
	lastArrival     time.Duration
	arrivalsInOrder bool

	// Per-step scratch, reused.
	newPrefills, runDecodes, runPrefills []*sequence
	swapDecodes, swapPrefills            []*sequence
	preempted, swappedOut                []*sequence
	hits                                 []int32
	outs                                 []Output
	// omitted counts the tokens the last Complete gave no Output
	// (OmittedTokens).
	omitted int

	// Block tables and hash lists of released sequences the pool had no
	// room for: a burst adds every request up front, each with a fresh
	// sequence, so without these every admission allocated both anew.
	spares []spareTables

	// V1 with pipeline parallelism: one slot per batch that can be in
	// flight (step_with_batch_queue); inFlight of them are.
	batches  []Step
	inFlight int
	// V0 with pipeline parallelism: the virtual engines, each a whole
	// scheduler; e itself only dispatches to them (pipeline.go).
	virt     []*Engine
	lastVirt int // the virtual engine scheduled last

	// passHook, when set (only by the differential oracle test), sees every
	// scheduling pass, each of which is one schedule() call in vLLM.
	passHook *passHook

	// holdAdmissions: V0 schedules only what is running (HoldAdmissions).
	holdAdmissions bool
}

// HoldAdmissions, while hold is true, makes V0's Schedule continue the
// running batch only: no waiting request is admitted and nothing is
// swapped in (running prefill chunks still advance). A driver that runs
// vLLM's multi-step scheduling uses it for every step of a group but the
// first: vLLM 0.6's LLMEngine.step skips the scheduler while the group's
// steps remain (_has_remaining_steps), so nothing joins the batch until
// the group ends. V1 has no multi-step scheduling and ignores it.
func (e *Engine) HoldAdmissions(hold bool) { e.holdAdmissions = hold }

// New validates cfg and builds an engine with all KV blocks free.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.PipelineParallel > 1 && cfg.Version == V0 {
		return newVirtualEngines(cfg)
	}
	e := &Engine{
		cfg:             cfg,
		log:             cfg.Logger,
		kv:              newBlockPool(cfg.NumGPUBlocks, cfg.EnablePrefixCaching, cfg.Version == V0),
		arrivalsInOrder: true,
	}
	e.cur = &e.step
	if cfg.Version == V0 {
		e.wmBlocks = int(cfg.Watermark * float64(cfg.NumGPUBlocks))
	}
	if cfg.PipelineParallel > 1 {
		e.batches = make([]Step, cfg.PipelineParallel)
	}
	return e, nil
}

// Config returns the configuration the engine was built with.
func (e *Engine) Config() Config { return e.cfg }

// Err is the engine's terminal failure (ErrNoSwapSpace), or nil.
func (e *Engine) Err() error { return e.err }

// Add queues a request at the back of the waiting queue. It rejects only
// what vLLM's API rejects before the engine sees a request (HTTP 400,
// errors.Is ErrBadRequest), or anything once the engine has died.
func (e *Engine) Add(r Request) error {
	if e.err != nil {
		return e.err
	}
	if e.virt != nil {
		return e.addVirtual(r)
	}
	promptLen := r.PromptLen
	if r.Prompt != nil {
		promptLen = len(r.Prompt)
	}
	switch {
	case promptLen <= 0:
		return &badRequestError{"The decoder prompt cannot be empty"}
	case r.RemotePromptTokens < 0:
		return &badRequestError{fmt.Sprintf("remote prompt tokens must not be negative, got %d.", r.RemotePromptTokens)}
	case r.MaxTokens < 1:
		return &badRequestError{fmt.Sprintf("max_tokens must be at least 1, got %d.", r.MaxTokens)}
	case r.MaxTokens > e.cfg.MaxModelLen-promptLen: // not promptLen+MaxTokens: no overflow
		return &badRequestError{fmt.Sprintf("This model's maximum context length is %d tokens. "+
			"However, you requested %d tokens (%d in the messages, %d in the completion). "+
			"Please reduce the length of the messages or completion.",
			e.cfg.MaxModelLen, promptLen+r.MaxTokens, promptLen, r.MaxTokens)}
	}
	if e.byID.get(r.ID) != nil {
		return &badRequestError{fmt.Sprintf("request id %d is already in the engine; request IDs must be unique", r.ID)}
	}
	if r.Arrival < e.lastArrival {
		e.arrivalsInOrder = false
	}
	e.lastArrival = r.Arrival
	s := e.newSequence()
	s.id = r.ID
	s.arrival = r.Arrival
	s.prompt = r.Prompt
	s.promptLen = promptLen
	s.deferred = r.Prompt == nil && r.DeferredPrompt && e.cfg.PromptIDs != nil
	s.maxTokens = r.MaxTokens
	// The last prompt token is always computed here: its logits sample
	// the first output token.
	s.remote = int32(min(r.RemotePromptTokens, promptLen-1))
	s.state = stateWaiting
	e.byID.put(r.ID, s)
	e.waiting.pushBack(s)
	return nil
}

type spareTables struct {
	blocks []int32
	hashes []uint64
}

// adoptSpare gives s, which has never held blocks or hashes, the tables of
// a released sequence.
func (e *Engine) adoptSpare(s *sequence) {
	if n := len(e.spares); n > 0 && cap(s.blocks)+cap(s.hashes) == 0 {
		s.blocks, s.hashes = e.spares[n-1].blocks, e.spares[n-1].hashes
		e.spares[n-1] = spareTables{}
		e.spares = e.spares[:n-1]
	}
}

func (e *Engine) newSequence() *sequence {
	if n := len(e.pool); n > 0 {
		s := e.pool[n-1]
		e.pool = e.pool[:n-1]
		return s
	}
	return &sequence{}
}

// release returns a finished sequence to the pool; its blocks must be freed.
// The pool keeps at most a batch's worth: after a burst of arrivals every
// request is released with no Add to reuse it, and a pool of them all would
// only hold memory for the collector to scan.
func (e *Engine) release(s *sequence) {
	e.byID.del(s.id)
	if len(e.pool) >= e.cfg.MaxNumSeqs {
		if cap(s.blocks)+cap(s.hashes) > 0 && len(e.spares) < e.cfg.MaxNumSeqs {
			e.spares = append(e.spares, spareTables{s.blocks[:0], s.hashes[:0]})
		}
		*s = sequence{gen: s.gen + 1}
		return
	}
	*s = sequence{gen: s.gen + 1, blocks: s.blocks[:0], hashes: s.hashes[:0]}
	e.pool = append(e.pool, s)
}

// Abort removes a request from whichever queue holds it and frees its GPU
// and CPU blocks (a client disconnected). It reports whether the request was
// in the engine. A pending Step still computes it, but Complete skips it.
func (e *Engine) Abort(id uint64) bool {
	if e.virt != nil {
		return e.abortVirtual(id)
	}
	s := e.byID.get(id)
	if s == nil {
		return false
	}
	isTarget := func(x *sequence) bool { return x == s }
	switch s.state {
	case stateWaiting:
		e.waiting.removeFunc(isTarget)
	case stateRunning:
		e.running.removeFunc(isTarget)
	case stateSwapped:
		e.swapped.removeFunc(isTarget)
	}
	e.freeGPU(s)
	e.freeCPU(s)
	e.release(s)
	return true
}

// Idle reports that nothing is running, waiting or swapped.
func (e *Engine) Idle() bool {
	if e.virt != nil {
		return e.idleVirtual()
	}
	return e.running.len() == 0 && e.waiting.len() == 0 && e.swapped.len() == 0
}

// KVUsage is vLLM's gpu_cache_usage: 1 - free/total, where free blocks
// include evictable prefix-cached ones and, as in vLLM V1 since it subtracts
// its null block, total counts only blocks requests can hold.
func (e *Engine) KVUsage() float64 {
	if e.virt != nil {
		return e.kvUsageVirtual()
	}
	return 1 - float64(e.kv.free)/float64(e.kv.usable())
}

// ResetPrefixCache drops every cached block hash (vLLM's
// /reset_prefix_cache). Like vLLM (V1 BlockPool and V0's prefix-caching
// allocator) it refuses and returns false while any GPU block is held by a
// running request, since those blocks cannot be un-cached under it. Without
// prefix caching it does nothing and returns true.
func (e *Engine) ResetPrefixCache() bool {
	if e.virt != nil {
		return e.resetVirtual()
	}
	return e.kv.reset()
}

// Stats returns the current gauges and cumulative counters.
func (e *Engine) Stats() Stats {
	if e.virt != nil {
		return e.statsVirtual()
	}
	st := e.stats
	st.Running, st.Waiting, st.Swapped = e.running.len(), e.waiting.len(), e.swapped.len()
	st.GPUBlocksTotal = e.kv.total
	st.GPUBlocksUsed = e.kv.usable() - e.kv.free // V1's null block is not "used"
	st.CPUBlocksTotal = e.cfg.NumCPUBlocks
	st.CPUBlocksUsed = e.cpuUsed
	return st
}

// Schedule decides the next step at time now (the driver's clock): it
// admits, chunks, preempts and allocates KV blocks exactly as the configured
// vLLM version would. The returned Step is never nil and stays valid until
// the next Schedule; report its Rejected requests before scheduling again.
// Calling Schedule again before Complete returns the same pending step
// (with no Rejected). Once the engine has died it returns empty steps.
//
// With Config.PipelineParallel P > 1, up to P steps are pending at once:
// each Schedule returns a new step (a pending one stays valid until its
// Complete) or, when P are pending or nothing can run, an empty one.
// Complete them in the order they were scheduled, as a pipeline returns
// them (MaxBatches).
func (e *Engine) Schedule(now time.Duration) *Step {
	if e.virt != nil {
		return e.scheduleVirtual(now)
	}
	if e.batches != nil {
		if e.cur = e.freeBatch(); e.cur == &e.step {
			return e.cur
		}
	}
	st := e.cur
	st.Rejected = st.Rejected[:0]
	if e.passHook != nil {
		e.passHook.rejected = 0
	}
	if e.pending {
		return st
	}
	st.Shape = perf.StepShape{}
	st.entries = st.entries[:0]
	st.decodeHits = 0
	if e.err != nil {
		return st
	}
	e.now = now
	// A pass that only preempts or rejects (vLLM would run a step with no
	// tokens, just swap-outs) is followed at once by another, so the driver
	// never sees an empty step while work remains. Two more passes always
	// settle: the second finds the freed blocks or rejects what never fits.
	for range 3 {
		e.changed = false
		switch {
		case e.cfg.Version == V1:
			e.scheduleV1()
		case e.cfg.EnableChunkedPrefill:
			e.scheduleV0Chunked()
		default:
			e.scheduleV0Default()
		}
		if e.passHook != nil {
			e.passHook.endPass(e)
		}
		if e.err != nil {
			e.die()
			return st
		}
		if st.Shape.Tokens() > 0 || !e.changed {
			break
		}
	}
	if e.kv.extraRefs > 0 && st.decodeHits > 0 {
		// A decode that hit the cache reads those blocks after whoever
		// computed them; only blocks still held by more than one request
		// can be read twice in a step.
		bs := int64(e.cfg.BlockSize)
		st.Shape.SharedDecodeContext = min(int64(e.kv.extraRefs)*bs, st.decodeHits, st.Shape.DecodeContext)
		st.Shape.SharedPrefixTokens = int64(e.kv.sharedBlocks) * bs
	}
	if e.batches == nil {
		e.pending = st.Shape.Tokens() > 0
	} else if st.Shape.Tokens() > 0 {
		st.inFlight = true
		e.inFlight++
	}
	return st
}

// Complete applies a step the driver has finished running: computed tokens
// advance, every sequence whose prefill completed or that decoded samples
// one token, and finished requests free their blocks (cached blocks stay
// evictable). It returns one Output per request the step computed, partial
// prefill chunks included (NewTokens 0), so the driver also learns when a
// request was first scheduled; requests aborted meanwhile are skipped. The
// slice is reused by the next Complete. Completing a step twice, or a step
// that is not pending, returns nil.
func (e *Engine) Complete(st *Step) []Output {
	switch {
	case e.virt != nil:
		return e.completeVirtual(st)
	case e.batches != nil:
		if !e.ownsBatch(st) {
			return nil
		}
		st.inFlight = false
		e.inFlight--
	case st != &e.step || !e.pending:
		return nil
	default:
		e.pending = false
	}
	e.stats.Steps++
	e.omitted = 0
	outs, finished := e.advanceSequences(st)
	if finished > 0 {
		e.releaseFinished(st)
	}
	e.outs = outs
	return outs
}

// advanceSequences applies a completed step to its sequences, as Complete
// describes, and returns their outputs in e.outs's buffer and how many
// sequences finished (stateDone, blocks freed, not yet released).
func (e *Engine) advanceSequences(st *Step) (outs []Output, finished int) {
	// Outputs are written field by field into a reused buffer: Err is
	// never set here, so the hot loop stores no pointers (no write barriers).
	outs = e.outs[:0]
	if cap(outs) < len(st.entries) {
		outs = make([]Output, 0, 2*len(st.entries))
	}
	outs = outs[:len(st.entries)]
	n := 0
	v0 := e.cfg.Version == V0
	omit := e.cfg.OmitRunTokens
	step := e.stats.Steps
	var generated int64
	for i := range st.entries {
		en := &st.entries[i]
		s := en.s
		if s.gen != en.gen {
			continue // aborted while the step ran
		}
		s.computed += int(en.charged)
		s.inflight -= int(en.charged)
		if omit && !en.prefill && s.lastToken == step-1 && s.lastToken != 0 &&
			s.computed >= s.len() && s.generated+1 < s.maxTokens {
			// A decode that continues its run and does not finish it:
			// the bulk of every step, with no output to give.
			s.generated++
			s.lastToken = step
			generated++
			e.omitted++
			continue
		}
		if v0 && en.prefill {
			e.stats.PromptTokens += int64(en.charged)
		}
		newTokens := 0
		var prevToken int64
		if s.computed >= s.len() {
			if s.generated == 0 && !v0 {
				e.stats.PromptTokens += int64(s.promptLen)
			}
			s.generated++
			s.decoding = true
			newTokens = 1
			generated++
			prevToken = s.lastToken
			s.lastToken = step
			if prevToken == step-1 && omit && prevToken != 0 && s.generated < s.maxTokens {
				e.omitted++
				continue // only continues the request's run
			}
		}
		done := s.generated >= s.maxTokens
		o := &outs[n]
		n++
		o.ID = s.id
		o.CachedTokens = 0
		if !s.reported {
			s.reported = true
			o.CachedTokens = int(s.cached)
		}
		o.NewTokens = newTokens
		o.NumGenerated = s.generated
		o.Finished = done
		o.TokenGap = 0
		if omit && prevToken != 0 {
			o.TokenGap = int32(step - prevToken)
		}
		if done {
			e.freeGPU(s)
			s.state = stateDone
			finished++
		}
	}
	e.stats.GenerationTokens += generated
	return outs[:n], finished
}

// releaseFinished takes the sequences advanceSequences finished out of the
// running queue and returns them to the pool.
func (e *Engine) releaseFinished(st *Step) {
	e.running.removeFunc(isDone)
	for i := range st.entries {
		en := &st.entries[i]
		if en.s.gen == en.gen && en.s.state == stateDone {
			e.release(en.s)
		}
	}
}

func isDone(s *sequence) bool { return s.state == stateDone }

// OmittedTokens is how many tokens the last Complete generated without an
// Output (Config.OmitRunTokens): each only continued its request's run.
// A driver that counts the tokens a step streams adds them to its outputs'.
func (e *Engine) OmittedTokens() int { return e.omitted }

// tokenGap is Output.TokenGap for an output of s given between Completes.
func (e *Engine) tokenGap(s *sequence) int32 {
	if !e.cfg.OmitRunTokens || s.lastToken == 0 {
		return 0
	}
	return int32(e.stats.Steps - s.lastToken)
}

// addEntry puts s in the step: charged tokens advance it (what the token
// budget paid, vLLM's token_chunk_size), of which the model computes the
// last tokens; the others are prefix-cache hits (V0 counts them as
// scheduled, V1 does not).
func (e *Engine) addEntry(s *sequence, tokens, charged int) {
	st := e.cur
	if e.cfg.Version == V0 {
		// Only V0's scheduler and evictor read these; V1 leaves their
		// cache line alone.
		s.chunk = int32(charged)
		s.lastAccess = e.now
	}
	ctx := s.computed + s.inflight + charged - tokens
	s.inflight += charged
	// Filled in place: a composite literal copied into the slice is read
	// back wider than it was written, which stalls store forwarding.
	st.entries = append(st.entries, entry{})
	en := &st.entries[len(st.entries)-1]
	en.s, en.gen, en.tokens, en.ctx, en.charged, en.prefill = s, s.gen, int32(tokens), int32(ctx), int32(charged), !s.decoding
	sh := &st.Shape
	if en.prefill {
		p, c := int64(tokens), int64(ctx)
		sh.PrefillTokens += tokens
		sh.Prefills++
		if ctx+tokens >= s.len() {
			sh.PrefillsDone++
		}
		sh.AttnPairs += p*c + p*(p+1)/2
		sh.KVTokens += c + p
		return
	}
	sh.AddDecode(ctx)
	st.decodeHits += int64(s.cached)
}

// reject gives up on s (already out of its queue) with a FINISHED_IGNORED
// reason.
func (e *Engine) reject(s *sequence, msg string) {
	e.changed = true
	if e.log != nil {
		e.log.LogAttrs(context.Background(), slog.LevelWarn, msg, slog.Uint64("request_id", s.id))
	}
	e.freeGPU(s)
	e.freeCPU(s)
	e.cur.Rejected = append(e.cur.Rejected, Output{
		ID: s.id, NumGenerated: s.generated, CachedTokens: int(s.cached), Finished: true, TokenGap: e.tokenGap(s), Err: &ignoredError{msg},
	})
	e.release(s)
}

// die fails every request with e.err, as vLLM's engine dies on a
// RuntimeError, and leaves the engine empty.
func (e *Engine) die() {
	all := e.byID.all(make([]*sequence, 0, e.byID.len()))
	slices.SortFunc(all, func(a, b *sequence) int { return cmp.Compare(a.id, b.id) })
	for _, s := range all {
		e.freeGPU(s)
		e.freeCPU(s)
		e.cur.Rejected = append(e.cur.Rejected, Output{
			ID: s.id, NumGenerated: s.generated, CachedTokens: int(s.cached), Finished: true, TokenGap: e.tokenGap(s), Err: e.err,
		})
		e.release(s)
	}
	e.waiting, e.running, e.swapped = seqQueue{}, seqQueue{}, seqQueue{}
	e.cur.Shape = perf.StepShape{}
	e.cur.entries = e.cur.entries[:0]
	e.pending = false
	for i := range e.batches {
		e.batches[i].inFlight = false
	}
	e.inFlight = 0
	if e.log != nil {
		e.log.Error("engine died", slog.String("error", e.err.Error()))
	}
}

func (e *Engine) countPreemption(s *sequence, mode string) {
	if e.log != nil && e.stats.Preemptions%50 == 0 {
		e.log.Warn(fmt.Sprintf("Sequence group %d is preempted by %s mode because there is not enough KV cache space. "+
			"This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size "+
			"to provide more KV cache memory. total_num_cumulative_preemption=%d", s.id, mode, e.stats.Preemptions+1))
	}
	e.stats.Preemptions++
	e.changed = true
	if e.passHook != nil {
		e.passHook.preempted(s, mode)
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// --- KV block bookkeeping -------------------------------------------------

func (e *Engine) allocBlocks(s *sequence, n int) {
	if n <= 0 {
		return
	}
	s.gpuBlocks += n
	if !e.kv.caching {
		e.kv.free -= n
		return
	}
	e.reserveBlocks(s, n)
	for range n {
		s.blocks = append(s.blocks, e.kv.alloc())
	}
}

// freeGPU releases s's GPU blocks tail first, so with prefix caching its
// last blocks are the first evicted.
func (e *Engine) freeGPU(s *sequence) {
	if !e.kv.caching {
		e.kv.free += s.gpuBlocks
		s.gpuBlocks = 0
		return
	}
	bs := int32(e.cfg.BlockSize)
	for i := len(s.blocks) - 1; i >= 0; i-- {
		e.kv.release(s.blocks[i], s.lastAccess, int32(i+1)*bs)
	}
	s.blocks = s.blocks[:0]
	s.gpuBlocks = 0
	s.hashedBlocks = 0
	s.promptCached = false
}

func (e *Engine) freeCPU(s *sequence) {
	e.cpuUsed -= int(s.cpuBlocks)
	s.cpuBlocks = 0
}

// findHits looks up the longest run of s's leading full blocks in the
// prefix cache, capped so at least the last token is recomputed (vLLM needs
// its logits). The result aliases e.hits.
func (e *Engine) findHits(s *sequence) []int32 {
	e.hits = e.hits[:0]
	if !e.kv.caching || !s.hasPrompt() {
		return e.hits
	}
	maxBlocks := (s.len() - 1) / e.cfg.BlockSize
	for i := range maxBlocks {
		b := e.kv.lookup(e.blockHash(s, i))
		if b == noBlock {
			break
		}
		e.hits = append(e.hits, b)
	}
	return e.hits
}

// reserveBlocks makes room in s's block table for n more blocks, at once
// for every block the request can ever hold rather than by doubling.
func (e *Engine) reserveBlocks(s *sequence, n int) {
	if len(s.blocks)+n > cap(s.blocks) {
		e.adoptSpare(s)
	}
	if len(s.blocks)+n > cap(s.blocks) {
		most := ceilDiv(s.promptLen+s.maxTokens, e.cfg.BlockSize)
		s.blocks = slices.Grow(s.blocks, max(n, most-len(s.blocks)))
	}
}

// takeHits references the hit blocks as s's leading blocks.
func (e *Engine) takeHits(s *sequence, hits []int32) {
	for _, b := range hits {
		e.kv.touch(b, e.now)
	}
	e.reserveBlocks(s, len(hits))
	s.blocks = append(s.blocks, hits...)
	s.gpuBlocks += len(hits)
	s.hashedBlocks = len(hits)
	s.promptCached = false
}

// evictableHits counts hit blocks that sit free in the cache: taking them
// uses up free blocks.
func (e *Engine) evictableHits(hits []int32) int {
	n := 0
	for _, b := range hits {
		if e.kv.meta[b].ref == 0 {
			n++
		}
	}
	return n
}

// cacheFull registers s's blocks that are full once upTo tokens are in,
// as vLLM caches full blocks when it allocates them. Only blocks made of
// prompt tokens are registered here: a block holding generated tokens can
// only ever be hit by the same request after a preemption (its token IDs
// are unique to the request), so cacheForResume registers those when the
// request is preempted. Hits come out exactly as in vLLM, with half the
// hashing and table churn.
func (e *Engine) cacheFull(s *sequence, upTo int) {
	if !e.kv.caching || !s.hasPrompt() {
		return
	}
	e.registerBlocks(s, min(upTo, s.promptLen))
}

// cacheForResume registers every computed full block of a request about to
// be preempted, so its recompute can hit them while they survive.
func (e *Engine) cacheForResume(s *sequence) {
	if !e.kv.caching || !s.hasPrompt() {
		return
	}
	e.registerBlocks(s, s.computed)
}

func (e *Engine) registerBlocks(s *sequence, upTo int) {
	bs := e.cfg.BlockSize
	if s.hashedBlocks >= len(s.blocks) || (s.hashedBlocks+1)*bs > upTo {
		return // no new full block; the usual case, decided without dividing
	}
	full := min(upTo/bs, len(s.blocks))
	for i := s.hashedBlocks; i < full; i++ {
		e.kv.setHash(s.blocks[i], e.blockHash(s, i))
	}
	s.hashedBlocks = max(s.hashedBlocks, full)
	s.promptCached = (s.hashedBlocks+1)*bs > s.promptLen
}

// noteAdmission records the prefix-cache lookup of a request's first
// admission. Re-admissions after a preemption do not count (vLLM PR #25787:
// a request re-hitting its own blocks inflated the hit rate), and neither
// do admission attempts that did not fit (0.8.5 counted each).
func (e *Engine) noteAdmission(s *sequence, hitTokens int) {
	if s.admitted {
		return
	}
	s.admitted = true
	s.cached = int32(hitTokens)
	if e.kv.caching {
		e.stats.PrefixQueries += int64(s.len())
		e.stats.PrefixHits += int64(hitTokens)
	}
}
