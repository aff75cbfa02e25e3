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
	if cost.PerRequest <= 0 && cost.PerChunk <= 0 {
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
func (c *ClientStage) Holds() bool { return c.cost.PerRequest > 0 || c.cost.PerChunk > 0 }

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
