package workload

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Stream hands out a workload's requests one at a time in arrival order
// (stable: equal arrivals keep their index order), each with its Arrival
// set. A Stream from NewStream generates each request when it is taken, so
// a run of millions of requests holds none of them; one from StreamOf walks
// a built slice.
type Stream struct {
	n    int
	next func() Request // the next request in arrival order
	peek *Request
	got  int
	buf  Request
	// With deferred prompts, bufRef names buf's prompt and src builds it.
	deferred bool
	bufRef   PromptRef
	src      *randomPrompts
	// free holds prompt buffers given back with Recycle; nil for a stream
	// whose prompts belong to the caller (StreamOf).
	free *promptBuffers
}

// Recycle gives back the PromptIDs of a request this stream made, once
// nothing reads them any more, so a later request's prompt is built in
// them: a long run then allocates prompts only for the requests in flight
// at once. It does nothing for a StreamOf stream (the caller owns those
// IDs) or a nil slice.
func (s *Stream) Recycle(ids []int32) {
	if s.free != nil && ids != nil {
		s.free.put(ids)
	}
}

// PromptRef names the prompt of a request from a stream with deferred
// prompts (8 bytes instead of 4 a token); BuildPrompt makes its IDs.
type PromptRef struct {
	len, start int32
}

// DeferPrompts makes a NewStream stream that carries prompt IDs hand out
// its requests without them: PromptRef then names the prompt of the
// request Next last returned, and BuildPrompt builds it when it is needed.
// It reports whether the stream can defer (a StreamOf stream cannot) and
// must be called before the first Peek or Next.
func (s *Stream) DeferPrompts() bool {
	if s.src == nil || s.got > 0 || s.peek != nil {
		return false
	}
	s.deferred = true
	return true
}

// PromptRef names the prompt of the request Next last returned, on a
// stream with deferred prompts; like that request, until the next Peek or
// Next.
func (s *Stream) PromptRef() PromptRef { return s.bufRef }

// BuildPrompt builds the IDs ref names, in a buffer given back with
// Recycle when there is one: the same IDs the request would have carried.
func (s *Stream) BuildPrompt(ref PromptRef) []int32 {
	return s.src.buildIn(s.free, int(ref.len), int(ref.start))
}

// promptBuffers is a free list of prompt buffers by size class; each
// buffer's capacity is a whole number of classes, so a buffer of class c
// holds any prompt of up to c*promptClass tokens.
type promptBuffers struct {
	byClass [][][]int32
}

const promptClass = 32

func (p *promptBuffers) get(n int) []int32 {
	c := (n + promptClass - 1) / promptClass
	if c < len(p.byClass) {
		if k := len(p.byClass[c]); k > 0 {
			ids := p.byClass[c][k-1]
			p.byClass[c] = p.byClass[c][:k-1]
			return ids[:n]
		}
	}
	return make([]int32, n, c*promptClass)
}

func (p *promptBuffers) put(ids []int32) {
	c := cap(ids) / promptClass
	if c == 0 {
		return
	}
	for len(p.byClass) <= c {
		p.byClass = append(p.byClass, nil)
	}
	p.byClass[c] = append(p.byClass[c], ids[:0])
}

// Len is the number of requests the stream yields in all.
func (s *Stream) Len() int { return s.n }

// Peek returns the next request without taking it, or nil at the end. The
// pointer is valid until the next call to Next.
func (s *Stream) Peek() *Request {
	if s.peek == nil && s.got < s.n {
		s.buf = s.next()
		s.peek = &s.buf
	}
	return s.peek
}

// Next takes the next request, or returns nil at the end. The pointer is
// valid until the next call to Peek or Next.
func (s *Stream) Next() *Request {
	r := s.Peek()
	if r != nil {
		s.peek = nil
		s.got++
	}
	return r
}

// StreamOf yields reqs in stable arrival order. The requests are copied
// as they are taken; reqs must not change while the stream is in use.
func StreamOf(reqs []Request) *Stream {
	i := 0
	order := ArrivalOrder(reqs)
	if order == nil {
		return &Stream{n: len(reqs), next: func() Request { i++; return reqs[i-1] }}
	}
	return &Stream{n: len(reqs), next: func() Request { i++; return reqs[order[i-1]] }}
}

// ArrivalOrder is the stable arrival order of reqs (indices into reqs),
// nil when they are already in order.
func ArrivalOrder(reqs []Request) []int32 {
	cmpArrival := func(a, b Request) int { return compareDurations(a.Arrival, b.Arrival) }
	if slices.IsSortedFunc(reqs, cmpArrival) {
		return nil
	}
	order := make([]int32, len(reqs))
	for k := range order {
		order[k] = int32(k)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmpArrival(reqs[a], reqs[b]) })
	return order
}

func compareDurations(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Streamable reports whether NewStream generates s's requests lazily: the
// random dataset without a tokenizer. Other specs need Build.
func Streamable(s Spec, tokenizerGiven bool) bool {
	return s.dataset() == DatasetRandom && !tokenizerGiven
}

// NewStream generates the requests Build and Schedule would give for s
// (random dataset, no tokenizer: see Streamable) and a, in arrival order,
// each when it is taken: the same requests with the same arrivals, in O(1)
// memory instead of O(NumPrompts). With promptIDs each request carries
// Build's PromptIDs, in a buffer given back with Recycle when there is one;
// without, only PromptLen (a simulation without prefix caching needs no
// more).
//
// The dataset draws all input lengths, then all output lengths, then all
// body offsets from one random stream (vLLM's order). NewStream walks that
// stream once to find where each pass starts, then reads the three passes
// side by side; the arrival gaps are likewise drawn twice, once for their
// sum (the rescale to n/rate) and once as they are taken.
func NewStream(ctx context.Context, s Spec, a Arrivals, promptIDs bool) (*Stream, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !Streamable(s, false) {
		return nil, fmt.Errorf("workload: the %s dataset is built whole, not streamed; use Build", s.dataset())
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	b := &builder{ctx: ctx, spec: s}
	o := s.Random
	if err := o.checkMinInput(0); err != nil {
		return nil, err
	}
	vocab, allowed, err := b.vocabulary()
	if err != nil {
		return nil, err
	}
	n := s.NumPrompts
	r := o.RangeRatio
	real := max(0, o.InputLen)
	inLow := int(math.Floor(float64(real) * (1 - r)))
	inHigh := int(math.Ceil(float64(real) * (1 + r)))
	outLow := max(1, int(math.Floor(float64(o.OutputLen)*(1-r))))
	outHigh := max(1, int(math.Ceil(float64(o.OutputLen)*(1+r))))

	// Walk the dataset's stream to the start of each pass, keeping each
	// pass's last draw: the last request may sort first (see
	// lazyArrivals) and is then made before the passes reach it.
	inputs := rand.NewPCG(uint64(s.Seed), datasetStream)
	walk := *inputs
	walker := rand.New(&walk)
	var last Request
	var lastOffset int
	for i := range n {
		if v := walker.IntN(inHigh - inLow + 1); i == n-1 {
			last.PromptLen = o.PrefixLen + inLow + v
		}
	}
	outputs := walk
	for i := range n {
		if v := walker.IntN(outHigh - outLow + 1); i == n-1 {
			last.MaxTokens = outLow + v
		}
	}
	offsets := walk
	for i := range n {
		if v := walker.IntN(vocab); i == n-1 {
			lastOffset = v
		}
	}
	prefix := make([]int, o.PrefixLen)
	fillRandom(walker, prefix, allowed)
	src := newRandomPrompts(prefix, len(allowed), nil)
	vocabLen := len(allowed)
	st := &Stream{n: n, free: &promptBuffers{}}
	if promptIDs {
		st.src = src
	}

	inRng, outRng, offRng := rand.New(inputs), rand.New(&outputs), rand.New(&offsets)
	gen := func(i int) Request {
		in := inLow + inRng.IntN(inHigh-inLow+1)
		out := outLow + outRng.IntN(outHigh-outLow+1)
		off := offRng.IntN(vocab)
		req := Request{Index: i, PromptLen: o.PrefixLen + in, MaxTokens: out}
		if promptIDs {
			st.setPrompt(&req, (off+i)%vocabLen)
		}
		return req
	}
	if n > 0 {
		last.Index = n - 1
	}
	arr, err := newLazyArrivals(n, a)
	if err != nil {
		return nil, err
	}
	lastTaken := false
	i := 0
	next := func() Request {
		if !lastTaken && (i == n-1 || arr.lastSortsBefore(i)) {
			lastTaken = true
			req := last
			req.Arrival = arr.last
			if promptIDs {
				st.setPrompt(&req, (lastOffset+n-1)%vocabLen)
			}
			if i == n-1 {
				i++
			}
			return req
		}
		req := gen(i)
		req.Arrival = arr.next()
		i++
		return req
	}
	st.next = next
	return st, nil
}

// setPrompt gives req, whose body starts at start, its prompt IDs, or with
// deferred prompts their name.
func (s *Stream) setPrompt(req *Request, start int) {
	if s.deferred {
		s.bufRef = PromptRef{len: int32(req.PromptLen), start: int32(start)}
		return
	}
	req.PromptIDs = s.src.buildIn(s.free, req.PromptLen, start)
}

// lazyArrivals is Schedule one offset at a time. Offsets before the last
// never decrease; the last is pinned to n/rate and may, by a nanosecond of
// rounding, fall below the ones before it, where a stable sort puts it.
type lazyArrivals struct {
	a     Arrivals
	n, i  int
	rng   *rand.Rand
	sum   float64
	scale float64
	// pending is the offset of request i, drawn ahead to compare with last.
	pending    time.Duration
	hasPending bool
	last       time.Duration
}

func newLazyArrivals(n int, a Arrivals) (*lazyArrivals, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	s := &lazyArrivals{a: a, n: n, scale: 1}
	if n == 0 {
		return s, nil
	}
	sum := 0.0
	rng := newRand(a.Seed, arrivalStream)
	for i := range n {
		sum += s.gap(rng, i)
	}
	s.rng = newRand(a.Seed, arrivalStream)
	if a.RampUp == "" && sum != 0 {
		s.scale = float64(n) / a.Rate / sum
		s.last = seconds(float64(n) / a.Rate)
	} else {
		s.last = seconds(sum * s.scale)
	}
	return s, nil
}

// gap is Schedule's gap before request i.
func (s *lazyArrivals) gap(rng *rand.Rand, i int) float64 {
	rate := s.a.rateAt(i, s.n)
	switch {
	case math.IsInf(rate, 1):
		return 0
	case math.IsInf(s.a.Burstiness, 1):
		return 1 / rate
	}
	return gamma(rng, s.a.Burstiness, 1/(rate*s.a.Burstiness))
}

func (s *lazyArrivals) peek() time.Duration {
	if !s.hasPending {
		s.sum += s.gap(s.rng, s.i)
		s.pending = seconds(s.sum * s.scale)
		s.hasPending = true
	}
	return s.pending
}

// next is the offset of the next request before the last.
func (s *lazyArrivals) next() time.Duration {
	d := s.peek()
	s.hasPending = false
	s.i++
	return d
}

// lastSortsBefore reports that the last request's offset is below request
// i's, so a stable sort by arrival takes it first.
func (s *lazyArrivals) lastSortsBefore(i int) bool {
	return i < s.n-1 && s.last < s.peek()
}
