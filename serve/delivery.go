package serve

import (
	"context"
	"slices"
	"sync"
	"time"
)

// deliverer wakes handlers Config.Delivery after the step that made their
// tokens went out (after the step, or later behind the API server's loop,
// perf.OutputLoop), as vLLM's output processing and the response's way to
// the client take that long. The step loop queues each step's streams in
// time order (nearly always at the end: steps end in order, and the loop
// only delays its chunks), so one goroutine with one timer serves every
// stream: a chunk costs the same one wake-up as without Delivery.
type deliverer struct {
	now  func() time.Duration
	wake chan struct{}

	mu    sync.Mutex
	queue []handOff
}

// handOff is the streams a step (or a rejection) made chunks for, which
// their clients receive at at.
type handOff struct {
	at      time.Duration
	streams []*stream
}

// add queues streams for their clients at at; the slice is the
// deliverer's from then on.
func (dl *deliverer) add(at time.Duration, streams []*stream) {
	dl.mu.Lock()
	// A rejection's notice goes out at its step, which may be before
	// chunks the loop still holds.
	i := len(dl.queue)
	for i > 0 && dl.queue[i-1].at > at {
		i--
	}
	dl.queue = slices.Insert(dl.queue, i, handOff{at, streams})
	dl.mu.Unlock()
	select {
	case dl.wake <- struct{}{}:
	default:
	}
}

// run wakes each queued stream at its time, until stopped is closed and
// the queue is empty (a request the loop finished before it stopped is
// still received).
func (dl *deliverer) run(stopped <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		dl.mu.Lock()
		var head handOff
		ok := len(dl.queue) > 0
		if ok {
			head = dl.queue[0]
		}
		dl.mu.Unlock()
		if !ok {
			select {
			case <-dl.wake:
				continue
			case <-stopped:
				dl.mu.Lock()
				empty := len(dl.queue) == 0
				dl.mu.Unlock()
				if empty {
					return
				}
				continue
			}
		}
		if wait := head.at - dl.now(); wait > 0 {
			timer.Reset(wait)
			<-timer.C
		}
		for _, st := range head.streams {
			st.signal()
		}
		dl.mu.Lock()
		dl.queue[0] = handOff{}
		dl.queue = dl.queue[1:]
		if len(dl.queue) == 0 {
			dl.queue = dl.queue[:0:0] // let the backing array go
		}
		dl.mu.Unlock()
	}
}

// handOff notes that st has new output from the current step; first that
// it is the request's first token, which goes out with the step's first
// tokens (perf.OutputLoop).
func (d *driver) handOff(st *stream, first bool) {
	switch {
	case !d.quiet:
	case first:
		d.firstHandOffs = append(d.firstHandOffs, st)
	default:
		d.handOffs = append(d.handOffs, st)
	}
}

// flushHandOffs passes the step's streams to the deliverer: their chunks
// went out at out, the first tokens at first.
func (d *driver) flushHandOffs(out, first time.Duration) {
	if len(d.handOffs) > 0 {
		d.s.deliverer.add(out+d.s.cfg.Delivery, d.handOffs)
		d.handOffs = nil
	}
	if len(d.firstHandOffs) > 0 {
		d.s.deliverer.add(first+d.s.cfg.Delivery, d.firstHandOffs)
		d.firstHandOffs = nil
	}
}

// receiver is a handler's side of its stream: it takes what the client
// has received by now, which with Config.Delivery is the tokens of steps
// that ended Delivery ago (the deliverer wakes it then).
type receiver struct {
	s        *Server
	st       *stream
	delivery time.Duration
	buf      []tokenBatch
}

func newReceiver(s *Server, st *stream) *receiver {
	return &receiver{s: s, st: st, delivery: s.cfg.Delivery}
}

// wait blocks until the stream is woken: new chunks received, its end,
// or the client gone (handlers signal that through the same channel).
func (r *receiver) wait() { <-r.st.notify }

// waitCtx is wait that also returns, with false, when ctx ends.
func (r *receiver) waitCtx(ctx context.Context) bool {
	select {
	case <-r.st.notify:
		return true
	case <-ctx.Done():
		return false
	}
}

// take returns the batches the client has received by now and the
// stream's state; done only once the request's end has been received.
// The slice is reused by the next take.
func (r *receiver) take() (batches []tokenBatch, cached int, done bool, err error) {
	if r.delivery <= 0 {
		batches, cached, done, err = r.st.take(r.buf)
	} else {
		batches, cached, done, err = r.st.takeReceived(r.buf, r.s.now(), r.delivery)
	}
	r.buf = batches
	return batches, cached, done, err
}
