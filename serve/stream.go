package serve

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/engine"
)

// tokenBatch is the tokens one step produced for one request, and the
// engine-clock instant the step model made them due.
type tokenBatch struct {
	due time.Duration
	n   int
}

// stream is one request in flight. The step loop pushes tokens; the
// request's handler takes them. The hand-off is a mutex-guarded backlog
// plus a one-slot notification channel, so the loop never blocks on a
// handler, however slowly its client reads.
type stream struct {
	req      engine.Request
	limit    int  // the request's max tokens (what it asked for, or what the context window leaves)
	hitLimit bool // the output length is the limit: finish_reason "length"
	// remotePrefill: the prompt's KV came from a remote prefill
	// (kv_transfer_params.do_remote_prefill), so its first step is timed as
	// a decode where the step model knows how (remotePrefillModel).
	remotePrefill bool
	textSeed      uint64
	// acceptedAt is when its handler began (engine clock), if accepted:
	// the server's Ingest runs from then, so the handler's own parsing
	// and tokenization count against it rather than on top of it.
	acceptedAt time.Duration
	accepted   bool
	// chat: a chat completions request, which the server prepares
	// (Config.ChatPrepare). from is when its Ingest and preparation may
	// start, submitted when submit ran, prepared when the event loop
	// finished preparing it; handOffPending says its hand-off (and so its
	// Arrival) is not known yet (Server.resolveHandOff).
	chat                      bool
	from, submitted, prepared time.Duration
	handOffPending            bool
	abortSent                 atomic.Bool
	// computed, if set, is called once on the step loop when the step that
	// finished the prompt is due (a KV producer starts its transfer then);
	// it must not block. Set before submit.
	computed func()

	notify chan struct{}

	mu       sync.Mutex
	backlog  []tokenBatch
	produced int
	cached   int
	done     bool
	err      error
	// doneDue is the step end that finished the request (doneTimed), which
	// its client learns Delivery later; a request ended by finish (abort,
	// shutdown) ends at once.
	doneDue   time.Duration
	doneTimed bool

	// Step-loop-only bookkeeping (no lock).
	scheduled                      bool
	scheduledAt, firstDue, lastDue time.Duration
	generated                      int
}

func newStream(req engine.Request, limit int, hitLimit bool, textSeed uint64) *stream {
	return &stream{req: req, limit: limit, hitLimit: hitLimit, textSeed: textSeed, notify: make(chan struct{}, 1)}
}

func (st *stream) signal() {
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

// push records one step's output for the request and wakes its handler,
// or leaves that to the deliverer when quiet (Config.Delivery).
func (st *stream) push(due time.Duration, o *engine.Output, quiet bool) {
	st.mu.Lock()
	if o.NewTokens > 0 {
		if n := len(st.backlog); n > 0 && st.backlog[n-1].due == due {
			st.backlog[n-1].n += o.NewTokens
		} else {
			st.backlog = append(st.backlog, tokenBatch{due: due, n: o.NewTokens})
		}
		st.produced += o.NewTokens
	}
	if o.CachedTokens > 0 {
		st.cached = o.CachedTokens
	}
	if o.Finished {
		if !st.done {
			st.doneDue, st.doneTimed = due, true
		}
		st.done = true
		// A request the scheduler ignored ends like vLLM's
		// FINISHED_IGNORED: finish_reason "length", no text, no error.
		if o.Err != nil && !errors.Is(o.Err, engine.ErrIgnored) {
			st.err = o.Err
		}
	}
	st.mu.Unlock()
	if !quiet {
		st.signal()
	}
}

// finish ends the request without further tokens.
func (st *stream) finish(err error) {
	st.mu.Lock()
	if !st.done {
		st.done, st.err = true, err
	}
	st.mu.Unlock()
	st.signal()
}

// take moves the backlog into buf (reusing its storage) and reports the
// request's state.
func (st *stream) take(buf []tokenBatch) (batches []tokenBatch, cached int, done bool, err error) {
	st.mu.Lock()
	batches = append(buf[:0], st.backlog...)
	st.backlog = st.backlog[:0]
	cached, done, err = st.cached, st.done, st.err
	st.mu.Unlock()
	return batches, cached, done, err
}

// takeReceived is take for a client that receives a step's tokens
// delivery after the step's end: it moves into buf only the batches due
// at or before now−delivery, and reports done once the end has been
// received too.
func (st *stream) takeReceived(buf []tokenBatch, now, delivery time.Duration) (batches []tokenBatch, cached int, done bool, err error) {
	cutoff := now - delivery
	st.mu.Lock()
	k := 0
	for k < len(st.backlog) && st.backlog[k].due <= cutoff {
		k++
	}
	batches = append(buf[:0], st.backlog[:k]...)
	rest := copy(st.backlog, st.backlog[k:])
	st.backlog = st.backlog[:rest]
	cached, err = st.cached, st.err
	done = st.done && rest == 0 && (!st.doneTimed || st.doneDue <= cutoff)
	st.mu.Unlock()
	return batches, cached, done, err
}

func (st *stream) finishReason() string {
	if st.hitLimit || st.generated >= st.limit {
		return finishLength
	}
	return finishStop
}
