package serve

import (
	"context"
	"time"
)

// receiver is a handler's side of its stream: it hands over each step's
// tokens Config.Delivery after the step's end (vLLM's output processing
// and the response's way to the client), so the step loop only appends to
// the stream's backlog and never waits on a client. Without Delivery it
// is the plain hand-off: one wake and one take per step, no timer.
type receiver struct {
	s        *Server
	st       *stream
	delivery time.Duration
	timer    *time.Timer
	armed    bool          // timer runs for the first pending batch
	armedAt  time.Duration // when it fires (engine clock)
	buf      []tokenBatch
}

func newReceiver(s *Server, st *stream) *receiver {
	return &receiver{s: s, st: st, delivery: s.cfg.Delivery}
}

// wait blocks until the step loop signals the stream (new tokens, its end,
// or the client gone, which handlers signal through the same channel) or
// the first pending batch's delivery time comes.
func (r *receiver) wait() {
	if !r.armed {
		<-r.st.notify
		return
	}
	select {
	case <-r.st.notify:
	case <-r.timer.C:
		r.armed = false
	}
}

// waitCtx is wait that also returns, with false, when ctx ends.
func (r *receiver) waitCtx(ctx context.Context) bool {
	var timerC <-chan time.Time
	if r.armed {
		timerC = r.timer.C
	}
	select {
	case <-r.st.notify:
	case <-timerC:
		r.armed = false
	case <-ctx.Done():
		return false
	}
	return true
}

// take returns the batches the client has received by now and the
// stream's state; done only once the request's end has been received.
// The slice is reused by the next take.
func (r *receiver) take() (batches []tokenBatch, cached int, done bool, err error) {
	if r.delivery <= 0 {
		batches, cached, done, err = r.st.take(r.buf)
		r.buf = batches
		return batches, cached, done, err
	}
	var next time.Duration
	var pending bool
	now := r.s.now()
	batches, cached, done, err, next, pending = r.st.takeReceived(r.buf, now, r.delivery)
	r.buf = batches
	if pending && !(r.armed && r.armedAt == next) {
		r.armedAt = next
		if r.timer == nil {
			r.timer = time.NewTimer(next - now)
		} else {
			r.timer.Reset(next - now)
		}
		r.armed = true
	} else if !pending && r.armed {
		r.timer.Stop()
		r.armed = false
	}
	return batches, cached, done, err
}

// stop releases the receiver's timer.
func (r *receiver) stop() {
	if r.timer != nil {
		r.timer.Stop()
	}
}
