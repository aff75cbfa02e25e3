package workload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/servebench/servebench/tokenizer"
)

// Stream hands out a workload's requests one at a time in arrival order
// (stable: equal arrivals keep their index order), each with its Arrival
// set. A Stream from NewStream or NewTokenizedStream generates each request
// when it is taken, so a run of millions of requests holds none of them;
// one from StreamOf walks a built slice.
type Stream struct {
	n    int
	next func() (streamItem, error)
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
	// err is what ended a generated stream early (see Err).
	err error
	// all is StreamOf's slice; hash fingerprints a generated stream's
	// requests as they are made (HashSchedule).
	all  []Request
	hash *scheduleHasher
}

// streamItem is a request as generated, with the name of its prompt when
// prompts are deferred.
type streamItem struct {
	req Request
	ref PromptRef
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
		it, err := s.next()
		if err != nil {
			s.err, s.n = err, s.got
			return nil
		}
		s.buf, s.bufRef = it.req, it.ref
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

// Err is what ended the stream before Len requests: a tokenizer's failure
// while making a prompt, or sonnet's bound on redraws. A consumer that ran
// out of requests checks it.
func (s *Stream) Err() error { return s.err }

// HashSchedule makes a generated stream fingerprint the schedule as it
// makes it, for ScheduleHash; it must be called before the first Peek
// or Next (a StreamOf stream needs no call).
func (s *Stream) HashSchedule() {
	if s.all == nil && s.got == 0 && s.peek == nil {
		s.hash = newScheduleHasher(s.n)
	}
}

// ScheduleHash is workload.ScheduleHash of the whole schedule: of
// StreamOf's requests, or of the requests a generated stream hands out,
// taken in index order and with the IDs of every token-ID prompt even
// where the stream leaves them out (Build sets them). Requests not yet
// taken are generated and hashed first.
func (s *Stream) ScheduleHash() (string, error) {
	if s.all != nil || s.n == 0 {
		return ScheduleHash(s.all), nil
	}
	if s.hash == nil {
		return "", errors.New("workload: the stream was not asked to hash its schedule (HashSchedule)")
	}
	for r := s.Next(); r != nil; r = s.Next() {
		s.Recycle(r.PromptIDs)
	}
	if s.err != nil {
		return "", s.err
	}
	return s.hash.sum(), nil
}

// StreamOf yields reqs in stable arrival order. The requests are copied
// as they are taken; reqs must not change while the stream is in use.
func StreamOf(reqs []Request) *Stream {
	i := 0
	order := ArrivalOrder(reqs)
	all := reqs
	if all == nil {
		all = []Request{}
	}
	if order == nil {
		return &Stream{n: len(reqs), all: all, next: func() (streamItem, error) { i++; return streamItem{req: reqs[i-1]}, nil }}
	}
	return &Stream{n: len(reqs), all: all, next: func() (streamItem, error) { i++; return streamItem{req: reqs[order[i-1]]}, nil }}
}

// ArrivalOrder is the stable arrival order of reqs (indices into reqs),
// nil when they are already in order.
func ArrivalOrder(reqs []Request) []int32 {
	cmpArrival := func(a, b Request) int { return cmp.Compare(a.Arrival, b.Arrival) }
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

// Streamable reports whether NewTokenizedStream generates s's requests
// lazily: every dataset but prefix_repetition, which shuffles its whole
// workload. Other specs need Build.
func Streamable(s Spec) bool { return s.dataset() != DatasetPrefixRepetition }

// NewStream generates the requests Build and Schedule would give for s
// (random dataset without a tokenizer; see NewTokenizedStream) and a, in
// arrival order, each when it is taken: the same requests with the same
// arrivals, in O(1) memory instead of O(NumPrompts). With promptIDs each
// request carries Build's PromptIDs, in a buffer given back with Recycle
// when there is one; without, only PromptLen (a simulation without prefix
// caching needs no more).
func NewStream(ctx context.Context, s Spec, a Arrivals, promptIDs bool) (*Stream, error) {
	if s.dataset() != DatasetRandom {
		return nil, fmt.Errorf("workload: NewStream makes random prompts, not %s; use NewTokenizedStream", s.dataset())
	}
	return NewTokenizedStream(ctx, s, a, nil, promptIDs)
}

// NewTokenizedStream is NewStream for any Streamable dataset, with prompts
// made and counted with tok (nil: token-ID random prompts, estimated text
// lengths). A text prompt with promptIDs also carries its encoding as
// PromptIDs (what sim takes for prefix caching), in a buffer given back
// with Recycle. What is held: sonnet's lines, and the requests of a
// sharegpt or custom file (one per entry, which oversampling repeats), as
// Build holds them, with each repeated entry's encoding; nothing per
// request beyond those in flight.
//
// Requests are made in index order: the last, whose arrival is pinned,
// may sort before a few just ahead of it (see lazyArrivals), and those are
// then made and held until it is taken. A failure while making a request
// (a tokenizer's, or sonnet's bound on redraws) ends the stream there:
// see Err.
func NewTokenizedStream(ctx context.Context, s Spec, a Arrivals, tok tokenizer.Tokenizer, promptIDs bool) (*Stream, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !Streamable(s) {
		return nil, fmt.Errorf("workload: the %s dataset is built whole, not streamed; use Build", s.dataset())
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	b := &builder{ctx: ctx, spec: s, tok: tok, rng: newRand(s.Seed, datasetStream)}
	var err error
	if b.numSpecial, err = numSpecialTokens(ctx, tok); err != nil {
		return nil, err
	}
	if b.spec, err = s.withLengths(b.numSpecial); err != nil {
		return nil, err
	}
	st := &Stream{free: &promptBuffers{}}
	switch s.dataset() {
	case DatasetRandom:
		err = st.random(b, a, promptIDs)
	case DatasetSonnet:
		var next func() (Request, error)
		if next, err = b.sonnetPrompts(); err == nil {
			prompt := func() (Request, int, error) {
				r, err := next()
				return r, -1, err
			}
			err = st.generate(s.NumPrompts, a, st.textPrompts(b, promptIDs, 0, prompt), nil)
		}
	default:
		err = st.filePrompts(b, a, promptIDs)
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// textPrompts makes each request from next, with its encoding as
// PromptIDs when promptIDs (none where the tokenizer fails, as sim had it).
// next also names the file entry the request copies (-1 for none):
// entries are encoded once, and their copies copy the encoding.
func (s *Stream) textPrompts(b *builder, promptIDs bool, entries int, next func() (Request, int, error)) func(int) (streamItem, error) {
	encoded := make([][]int32, entries)
	return func(i int) (streamItem, error) {
		req, entry, err := next()
		if err != nil {
			return streamItem{}, err
		}
		req.Index = i
		if !promptIDs || b.tok == nil {
			return streamItem{req: req}, nil
		}
		var ids []int32
		if entry >= 0 {
			ids = encoded[entry]
		}
		if ids == nil {
			enc, err := b.tok.Encode(b.ctx, req.Prompt)
			if err != nil {
				return streamItem{req: req}, nil
			}
			ids = make([]int32, len(enc))
			narrowIDs(ids, enc)
			if entry >= 0 {
				encoded[entry] = ids
			}
		}
		req.PromptIDs = append(s.free.get(len(ids))[:0], ids...)
		return streamItem{req: req}, nil
	}
}

// filePrompts streams sharegpt and custom: the file's requests, then
// (unless NoOversample) copies of them drawn as Build's oversampling does.
func (s *Stream) filePrompts(b *builder, a Arrivals, promptIDs bool) error {
	var distinct []Request
	var err error
	noOversample := b.spec.ShareGPT.NoOversample
	if b.spec.dataset() == DatasetShareGPT {
		distinct, err = b.shareGPTDistinct()
	} else {
		distinct, err = b.customDistinct()
		noOversample = b.spec.Custom.NoOversample
	}
	if err != nil {
		return err
	}
	n := len(distinct)
	if !noOversample && n > 0 {
		n = max(n, b.spec.NumPrompts)
	}
	// Without copies every entry is used once: nothing to keep encoded.
	entries := 0
	if n > len(distinct) {
		entries = len(distinct)
	}
	i := 0
	next := func() (Request, int, error) {
		k := i
		if k >= len(distinct) {
			k = b.rng.IntN(len(distinct))
		}
		i++
		if entries == 0 {
			return distinct[k], -1, nil
		}
		return distinct[k], k, nil
	}
	return s.generate(n, a, s.textPrompts(b, promptIDs, entries, next), nil)
}

// random streams the random dataset. It draws all input lengths, then all
// output lengths, then all body offsets, then the shared prefix from one
// random stream (vLLM's order), and with a tokenizer each prompt's padding
// from that prompt's own stream, as Build does. The stream is walked once
// to find where each pass starts, then the passes are read side by side.
func (s *Stream) random(b *builder, a Arrivals, promptIDs bool) error {
	o := b.spec.Random
	lengths := o.useLengths()
	if !lengths {
		if err := o.checkMinInput(b.numSpecial); err != nil {
			return err
		}
	}
	vocab, allowed, err := b.vocabulary()
	if err != nil {
		return err
	}
	n := b.spec.NumPrompts
	inLow, inHigh, outLow, outHigh := o.lengthRanges(b.numSpecial)

	inRng, outRng, offRng, prefix := b.randomPasses(n, vocab, allowed, inHigh-inLow+1, outHigh-outLow+1, lengths)
	var src *randomPrompts
	if b.tok == nil {
		src = newRandomPrompts(prefix, len(allowed))
		if promptIDs {
			s.src = src
		}
	}
	var seq []int
	var start int       // the body start of the request made last
	var hashIDs []int32 // its IDs for the hash, when it carries none
	build := func(i int) (streamItem, error) {
		var in, out int
		if lengths {
			in, out = o.requestLength(i, b.numSpecial)
		} else {
			in = inLow + inRng.IntN(inHigh-inLow+1)
			out = outLow + outRng.IntN(outHigh-outLow+1)
		}
		off := offRng.IntN(vocab)
		if b.tok == nil {
			start = (off + i) % len(allowed)
			it := streamItem{req: Request{Index: i, PromptLen: o.PrefixLen + in, MaxTokens: out}}
			it.ref = s.setPrompt(&it.req, start)
			return it, nil
		}
		seq = append(seq[:0], prefix...)
		seq = append(seq, make([]int, in)...)
		fillSequential(seq[o.PrefixLen:], allowed, off+i)
		prompt, ids, err := b.converge(paddingRand(b.spec.Seed, i), seq, o.PrefixLen+in, allowed)
		if err != nil {
			return streamItem{}, fmt.Errorf("workload: random prompt %d: %w", i, err)
		}
		it := streamItem{req: Request{Index: i, Prompt: prompt, PromptLen: len(ids), MaxTokens: out}}
		if promptIDs {
			it.req.PromptIDs = s.free.get(len(ids))
			narrowIDs(it.req.PromptIDs, ids)
		}
		return it, nil
	}
	var idsOf func(*Request) []int32
	if src != nil {
		idsOf = func(r *Request) []int32 {
			if r.PromptIDs != nil {
				return r.PromptIDs
			}
			hashIDs = src.fill(slices.Grow(hashIDs[:0], r.PromptLen)[:r.PromptLen], start)
			return hashIDs
		}
	}
	return s.generate(n, a, build, idsOf)
}

// randomPasses walks the random dataset's one stream to where each of its
// passes starts and returns a reader at each: n input lengths and n output
// lengths (drawn from spans of inSpan and outSpan values, and not drawn at
// all when the lengths come from a file, as in Build), n body offsets;
// then it draws the shared prefix.
func (b *builder) randomPasses(n, vocab int, allowed []int, inSpan, outSpan int, fromFile bool) (inRng, outRng, offRng *rand.Rand, prefix []int) {
	inputs := rand.NewPCG(uint64(b.spec.Seed), datasetStream)
	walk := *inputs
	walker := rand.New(&walk)
	skip := func(span int) {
		if fromFile {
			return
		}
		for range n {
			walker.IntN(span)
		}
	}
	skip(inSpan)
	outputs := walk
	skip(outSpan)
	offsets := walk
	for range n {
		walker.IntN(vocab)
	}
	prefix = make([]int, b.spec.Random.PrefixLen)
	fillRandom(walker, prefix, allowed)
	return rand.New(inputs), rand.New(&outputs), rand.New(&offsets), prefix
}

// generate makes the stream hand out n requests that build makes in index
// order, with Schedule's arrivals for a, in stable arrival order. idsOf,
// if set, gives the IDs ScheduleHash covers for the request build just
// made (by default its PromptIDs).
func (s *Stream) generate(n int, a Arrivals, build func(i int) (streamItem, error), idsOf func(*Request) []int32) error {
	arr, err := newLazyArrivals(n, a)
	if err != nil {
		return err
	}
	gen := func(i int) (streamItem, error) {
		it, err := build(i)
		if err != nil {
			return it, err
		}
		if i == n-1 {
			it.req.Arrival = arr.last
		} else {
			it.req.Arrival = arr.next()
		}
		if s.hash != nil {
			// A copy, so that only a hashed stream pays for a request
			// escaping to the heap: taking its address would move every
			// request there.
			req := it.req
			ids := req.PromptIDs
			if idsOf != nil {
				ids = idsOf(&req)
			}
			s.hash.add(&req, ids)
		}
		return it, nil
	}
	var held []streamItem // made ahead of the last request, which sorts before them
	i := 0
	s.n = n
	s.next = func() (streamItem, error) {
		if len(held) > 0 {
			it := held[0]
			held = held[1:]
			return it, nil
		}
		if arr.lastSortsBefore(i) {
			for ; i < n-1; i++ {
				it, err := gen(i)
				if err != nil {
					return it, err
				}
				held = append(held, it)
			}
		}
		i++
		return gen(i - 1)
	}
	return nil
}

// setPrompt gives req, whose body starts at start, its prompt IDs when
// the stream carries them, or with deferred prompts returns their name.
func (s *Stream) setPrompt(req *Request, start int) PromptRef {
	switch {
	case s.deferred:
		return PromptRef{len: int32(req.PromptLen), start: int32(start)}
	case s.src != nil:
		req.PromptIDs = s.src.buildIn(s.free, req.PromptLen, start)
	}
	return PromptRef{}
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
