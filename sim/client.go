package sim

import (
	"cmp"
	"slices"
	"time"

	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/vllm"
	"github.com/servebench/servebench/workload"
)

// ClientCost is the CPU a single-threaded benchmark client spends on each
// request (creating it, sending it, its closing events) and on each token
// chunk it receives. vllm.BenchClientCost gives vLLM's benchmark client's,
// measured by tools/vllm-clientcost.
type ClientCost struct {
	PerRequest time.Duration
	PerChunk   time.Duration
}

// clientEvent is one piece of work the client thread does: a request's
// send (chunk -1) or the receipt of its chunk-th token chunk.
type clientEvent struct {
	at    time.Duration
	rec   int
	chunk int
}

// ApplyClient rewrites recs' TTFT, ITL and Latency as a client with one
// thread would observe them: every send and every chunk the server
// produced queues, first come first served, for cost's CPU time, and a
// chunk is timed when the client has processed it. The server's timeline
// stays as simulated: a client that falls behind delays what it observes,
// not when the server streams. Under a concurrency cap it also delays when
// the next request is sent, which the simulation does itself from the
// same costs (Config.Client), so that no request starts before the slot it
// takes was freed as this client observes it. A zero cost leaves recs
// unchanged.
func ApplyClient(recs []*metrics.Record, cost ClientCost) {
	if !cost.timed() {
		return
	}
	var events []clientEvent
	for i, r := range recs {
		if r == nil || r.TTFT <= 0 {
			continue
		}
		events = append(events, clientEvent{at: r.Start, rec: i, chunk: -1})
		at := r.Start + r.TTFT
		events = append(events, clientEvent{at: at, rec: i, chunk: 0})
		for k, gap := range r.ITL {
			at += gap
			events = append(events, clientEvent{at: at, rec: i, chunk: k + 1})
		}
	}
	slices.SortStableFunc(events, func(a, b clientEvent) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return a.chunk - b.chunk
	})
	// last[i] is when the client finished processing recs[i]'s latest chunk.
	last := make([]time.Duration, len(recs))
	var free time.Duration
	for _, e := range events {
		begin := max(e.at, free)
		r := recs[e.rec]
		if e.chunk < 0 {
			free = begin + cost.PerRequest
			continue
		}
		free = begin + cost.PerChunk
		if e.chunk == 0 {
			r.TTFT = free - r.Start
		} else {
			r.ITL[e.chunk-1] = free - last[e.rec]
		}
		last[e.rec] = free
		r.Latency = free - r.Start
	}
}

// ClientStage passes a run's records to a sink as a client with cost
// observes them. With a cost, ApplyClient needs every record's events in
// time order, so the stage holds the records (the simulator must not
// recycle them: Holds) until Flush; with none, Add passes each on at once.
type ClientStage struct {
	cost ClientCost
	sink func(*metrics.Record) error
	held []*metrics.Record
	// noFirstToken marks by request index the replies to report with no
	// first token (NoFirstTokenFrom).
	noFirstToken []bool
}

// NoFirstTokenFrom makes the stage report the replies a replayed run's
// lengths mark NoFirstToken as that run's client recorded them: vLLM's
// benchmark_serving.py of 2024 timed the first token at the first chunk
// with text, so a reply that carried none kept TTFT 0 and 0 output tokens,
// both counted in its figures. The server still streamed one token (sim
// replays it as one), so only the client's view changes; its latency
// stays. For a vLLM-client view only (--client vllm-bench, validate).
func (c *ClientStage) NoFirstTokenFrom(lengths []workload.RequestLengths) {
	c.noFirstToken = nil
	for i, l := range lengths {
		if !l.NoFirstToken {
			continue
		}
		if c.noFirstToken == nil {
			c.noFirstToken = make([]bool, len(lengths))
		}
		c.noFirstToken[i] = true
	}
}

// deliver passes rec to the sink as the client recorded it.
func (c *ClientStage) deliver(rec *metrics.Record) error {
	if i := rec.Index; rec.Success && i >= 0 && i < len(c.noFirstToken) && c.noFirstToken[i] {
		rec.TTFT, rec.ITL, rec.OutputLen, rec.FirstChunkTokens, rec.GeneratedText = 0, nil, 0, 0, ""
	}
	return c.sink(rec)
}

// NewClientStage is a stage in front of sink.
func NewClientStage(cost ClientCost, sink func(*metrics.Record) error) *ClientStage {
	return &ClientStage{cost: cost, sink: sink}
}

// Holds reports whether Add keeps the records it is given.
func (c *ClientStage) Holds() bool { return c.cost.timed() }

// Add takes one finished record.
func (c *ClientStage) Add(rec *metrics.Record) error {
	if c.Holds() {
		c.held = append(c.held, rec)
		return nil
	}
	return c.deliver(rec)
}

// Flush times the held records through the client and passes them to the
// sink, in the order they came; the first sink error is returned after
// every record has been passed on.
func (c *ClientStage) Flush() error {
	ApplyClient(c.held, c.cost)
	var first error
	for _, rec := range c.held {
		if err := c.deliver(rec); err != nil && first == nil {
			first = err
		}
	}
	c.held = nil
	return first
}

// VLLMBenchClient is vLLM's benchmark client's cost on a host speed times
// the default one (vllm.BenchClientCost, measured by tools/vllm-clientcost).
func VLLMBenchClient(hostSpeed float64) ClientCost {
	perRequest, perChunk := vllm.BenchClientCost(hostSpeed)
	return ClientCost{PerRequest: perRequest, PerChunk: perChunk}
}

// timed reports whether the client spends any CPU.
func (c ClientCost) timed() bool { return c.PerRequest > 0 || c.PerChunk > 0 }

// clientThread is the benchmark client's one thread as the simulation
// runs it under a concurrency cap (Config.Client, TopologyConfig.Client):
// it frees a request's slot only when it has processed the request's last
// chunk, behind every send and chunk that reached it first. The loops
// count what each event hands it (chunks, finished) and hand it on; the
// chunks that reach it at one instant are one batch, processed once no
// more can join it, and the requests a batch finished free their slots
// when the thread is through the whole batch, no sooner than ApplyClient
// has any of them observed.
type clientThread struct {
	on   bool
	cost ClientCost
	// free is when the thread has processed what reached it so far;
	// queue holds the batches still to process, oldest first (from head).
	free  time.Duration
	queue []clientBatch
	head  int
	// chunks and finished count what the event being processed hands it
	// (the loops count unconditionally and hand on only when on);
	// firstChunks and firstFinished what of it goes out with the step's
	// first tokens, later behind an API server's loop (perf.OutputLoop).
	chunks, finished           int
	firstChunks, firstFinished int
}

// clientBatch is what reaches the client thread at one instant: the
// chunks, and how many requests they finished.
type clientBatch struct {
	at               time.Duration
	chunks, finished int
}

// newClientThread is the thread of a client with cost under a cap of
// limit requests (0: none); it is off, and times nothing, without both.
func newClientThread(cost ClientCost, limit int) clientThread {
	return clientThread{on: limit > 0 && cost.timed(), cost: cost}
}

// send queues a request's send at instant at.
func (c *clientThread) send(at time.Duration) {
	c.free = max(at, c.free) + c.cost.PerRequest
}

// hand queues what was counted since the last call as reaching the
// thread at instant at, and reports whether it opened a batch (rather than
// joining the newest, of the same instant or later: a lagged step's
// outputs, handed on ahead of the clock).
func (c *clientThread) hand(at time.Duration) (opened bool) {
	if c.chunks == 0 && c.finished == 0 {
		return false
	}
	if n := len(c.queue); n > c.head && c.queue[n-1].at >= at {
		b := &c.queue[n-1]
		b.chunks += c.chunks
		b.finished += c.finished
		opened = false
	} else {
		c.queue = append(c.queue, clientBatch{at: at, chunks: c.chunks, finished: c.finished})
		opened = true
	}
	c.chunks, c.finished = 0, 0
	return opened
}

// handFirst is hand for what goes out with the step's first tokens, at
// instant at: no sooner than the rest (hand first).
func (c *clientThread) handFirst(at time.Duration) (opened bool) {
	c.chunks, c.finished, c.firstChunks, c.firstFinished = c.firstChunks, c.firstFinished, 0, 0
	return c.hand(at)
}

// next is the instant of the oldest batch still to process.
func (c *clientThread) next() (time.Duration, bool) {
	if c.head == len(c.queue) {
		return 0, false
	}
	return c.queue[c.head].at, true
}

// process runs the thread through the oldest batch and returns when it is
// through, and how many requests the batch finished.
func (c *clientThread) process() (done time.Duration, finished int) {
	b := c.queue[c.head]
	c.head++
	if c.head > 1024 && c.head*2 > len(c.queue) {
		c.queue = c.queue[:copy(c.queue, c.queue[c.head:])]
		c.head = 0
	}
	c.free = max(b.at, c.free) + time.Duration(b.chunks)*c.cost.PerChunk
	return c.free, b.finished
}
