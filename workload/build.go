package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/servebench/servebench/internal/mix"
	"github.com/servebench/servebench/tokenizer"
)

// PCG stream selectors: the dataset and the arrival schedule draw from
// independent streams of the same seed, so changing the arrival options never
// changes the prompts.
const (
	datasetStream uint64 = 0x9e3779b97f4a7c15
	arrivalStream uint64 = 0xbf58476d1ce4e5b9
)

// maxConvergeRetries is vLLM's max_retry for gen_prompt_decode_to_target_len.
const maxConvergeRetries = 10

func newRand(seed int64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), stream))
}

// paddingStream seeds the random IDs that pad random prompt i while it
// converges through a tokenizer: a stream per prompt, so prompts can be
// made in any order, at once, and come out the same.
const paddingStream uint64 = 0x94d049bb133111eb

func paddingRand(seed int64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed)^paddingStream, mix.SplitMix64(uint64(i))))
}

// DefaultBuildWorkers is how many prompts Build makes at once with a
// tokenizer. A server's /tokenize and /detokenize answer in about half a
// millisecond each on loopback and a prompt needs about five in a row, so
// 16 in flight hide the round trips without queueing on a server's HTTP
// threads (llama.cpp has about one per core).
const DefaultBuildWorkers = 16

// SpecialTokenCounter is implemented by tokenizers that know how many special
// tokens (BOS, ...) the model adds to every prompt, HF's
// num_special_tokens_to_add(). Build uses it as vLLM does: random prompts are
// shortened by that many tokens, and text prompts' counts include them.
type SpecialTokenCounter interface {
	NumSpecialTokensToAdd() int
}

// SpecialTokenAsker is a SpecialTokenCounter that has to ask: a server
// tokenizer learns from its server how many special tokens a text prompt
// gets there (tokenizer.Server.SpecialTokensAdded).
type SpecialTokenAsker interface {
	SpecialTokensAdded(ctx context.Context) (int, error)
}

// numSpecialTokens is how many special tokens tok's model adds to a prompt,
// 0 when tok does not say.
func numSpecialTokens(ctx context.Context, tok tokenizer.Tokenizer) (int, error) {
	switch c := tok.(type) {
	case SpecialTokenAsker:
		n, err := c.SpecialTokensAdded(ctx)
		if err != nil {
			return 0, fmt.Errorf("tokenizer %s: counting the special tokens the server adds to a prompt: %w", tok.Name(), err)
		}
		return max(0, n), nil
	case SpecialTokenCounter:
		return max(0, c.NumSpecialTokensToAdd()), nil
	}
	return 0, nil
}

// BuildOptions tune how Build makes prompts; none changes what it makes.
type BuildOptions struct {
	// Workers is how many prompts are made at once where a tokenizer makes
	// them (random prompts); 0 means DefaultBuildWorkers, 1 one at a time.
	Workers int
	// Progress, if set, is called as random, sonnet, sharegpt and custom
	// prompts are made, with how many are made and how many are wanted
	// (a short sharegpt file stops short; its copies are not counted);
	// never from two goroutines at once.
	Progress func(done, total int)
}

// Build makes s.NumPrompts requests (prompt and OutputLen; Arrival is left 0)
// following vLLM's rules for the chosen dataset. tok may be nil: random and
// prefix_repetition prompts are then token-ID arrays over [0, s.VocabSize),
// and text datasets estimate their lengths (see the package documentation).
//
// Build returns fewer than NumPrompts requests only where vLLM does:
// prefix_repetition makes NumPrompts/NumPrefixes prompts per prefix, and
// sharegpt and custom with NoOversample return only what the file offers.
func Build(ctx context.Context, s Spec, tok tokenizer.Tokenizer) ([]Request, error) {
	return BuildWith(ctx, s, tok, BuildOptions{})
}

// BuildWith is Build with options: the same requests, made by opts.Workers
// at once and reported to opts.Progress.
func BuildWith(ctx context.Context, s Spec, tok tokenizer.Tokenizer, opts BuildOptions) ([]Request, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if opts.Workers < 0 {
		return nil, fmt.Errorf("workload: BuildOptions.Workers %d is negative", opts.Workers)
	}
	b := &builder{ctx: ctx, spec: s, tok: tok, rng: newRand(s.Seed, datasetStream), workers: opts.Workers, progress: opts.Progress}
	if b.workers == 0 {
		b.workers = DefaultBuildWorkers
	}
	var err error
	if b.numSpecial, err = numSpecialTokens(ctx, tok); err != nil {
		return nil, err
	}
	if b.spec, err = s.withLengths(b.numSpecial); err != nil {
		return nil, err
	}
	var reqs []Request
	switch s.dataset() {
	case DatasetRandom:
		reqs, err = b.random()
	case DatasetSonnet:
		reqs, err = b.sonnet()
	case DatasetShareGPT:
		reqs, err = b.shareGPT()
	case DatasetCustom:
		reqs, err = b.custom()
	case DatasetPrefixRepetition:
		reqs, err = b.prefixRepetition()
	}
	if err != nil {
		return nil, err
	}
	for i := range reqs {
		reqs[i].Index = i
	}
	return reqs, nil
}

type builder struct {
	ctx        context.Context
	spec       Spec
	tok        tokenizer.Tokenizer
	rng        *rand.Rand
	numSpecial int
	workers    int
	progress   func(done, total int)
}

// report passes progress on to BuildOptions.Progress, if any.
func (b *builder) report(done, total int) {
	if b.progress != nil {
		b.progress(done, total)
	}
}

// eachPrompt calls build(i) for every i in [0, n), b.workers at a time,
// reporting progress; build must write only what belongs to prompt i. On
// failure it stops handing out prompts and returns the error of the lowest
// failed index, so the error does not depend on timing.
func (b *builder) eachPrompt(n int, build func(i int) error) error {
	var (
		next, done atomic.Int64
		mu         sync.Mutex // orders progress calls and guards failed
		failed     = -1
		errs       = map[int]error{}
		wg         sync.WaitGroup
	)
	stop := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return failed >= 0
	}
	for range min(max(b.workers, 1), n) {
		wg.Go(func() {
			for !stop() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				err := b.canceled()
				if err == nil {
					err = build(i)
				}
				mu.Lock()
				if err != nil {
					errs[i] = err
					if failed < 0 || i < failed {
						failed = i
					}
				} else {
					b.report(int(done.Add(1)), n)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failed >= 0 {
		return errs[failed]
	}
	return nil
}

func (b *builder) tokenizerName() string {
	if b.tok == nil {
		return "(none)"
	}
	return b.tok.Name()
}

func (b *builder) canceled() error {
	if err := b.ctx.Err(); err != nil {
		return fmt.Errorf("building the %s workload: %w", b.spec.dataset(), err)
	}
	return nil
}

// vocabulary returns the vocabulary size and the IDs random prompts may use:
// every ID below it except the tokenizer's special IDs, ascending.
func (b *builder) vocabulary() (int, []int, error) {
	vocab := b.spec.VocabSize
	var special []int
	if b.tok != nil {
		vocab = b.tok.VocabSize()
		special = b.tok.SpecialIDs()
	}
	if vocab < 1 {
		return 0, nil, fmt.Errorf("tokenizer %s: vocabulary size %d: random prompts need at least one token ID", b.tokenizerName(), vocab)
	}
	banned := make(map[int]bool, len(special))
	for _, id := range special {
		banned[id] = true
	}
	allowed := make([]int, 0, vocab)
	for id := range vocab {
		if !banned[id] {
			allowed = append(allowed, id)
		}
	}
	if len(allowed) == 0 {
		return 0, nil, fmt.Errorf("tokenizer %s: all %d token IDs are special; random prompts need at least one ordinary ID", b.tokenizerName(), vocab)
	}
	return vocab, allowed, nil
}

// countTokens counts text's tokens as vLLM's tokenizer(text).input_ids does
// (special tokens included when the tokenizer reports them), or estimates the
// count without a tokenizer.
func (b *builder) countTokens(text string) (n int, estimated bool, err error) {
	if b.tok == nil {
		return estimateTokens(text), true, nil
	}
	ids, err := b.tok.Encode(b.ctx, text)
	if err != nil {
		return 0, false, fmt.Errorf("tokenizer %s: encode: %w", b.tok.Name(), err)
	}
	return len(ids) + b.numSpecial, false, nil
}

// estimateTokens is ceil(UTF-8 bytes / 4): about right for English with
// BPE vocabularies, an overestimate for code, an underestimate for CJK.
func estimateTokens(text string) int {
	return (len(text) + 3) / 4
}

// randomIDs draws len(dst) IDs uniformly from allowed.
func (b *builder) randomIDs(dst []int, allowed []int) { fillRandom(b.rng, dst, allowed) }

// tokenID is a token ID as a tokenizer returns it (int) or as a workload
// stores it (int32: every vocabulary fits, in half the memory).
type tokenID interface{ ~int | ~int32 }

func fillRandom[T tokenID](rng *rand.Rand, dst []T, allowed []int) {
	for i := range dst {
		dst[i] = T(allowed[rng.IntN(len(allowed))])
	}
}

// narrowIDs copies src into dst, which has the same length.
func narrowIDs(dst []int32, src []int) {
	for i, id := range src {
		dst[i] = int32(id)
	}
}

// converge is vLLM's gen_prompt_decode_to_target_len: decode the IDs,
// re-encode the text, and pad with random allowed IDs or truncate until the
// text encodes to exactly target tokens, at most maxConvergeRetries times.
// The returned IDs are the encoding of the returned text, so their length is
// the prompt's true length even when the retries run out. Padding IDs are
// drawn from rng.
func (b *builder) converge(rng *rand.Rand, seq []int, target int, allowed []int) (string, []int, error) {
	for retries := maxConvergeRetries; ; retries-- {
		text, err := b.tok.Decode(b.ctx, seq)
		if err != nil {
			return "", nil, fmt.Errorf("tokenizer %s: decode: %w", b.tok.Name(), err)
		}
		ids, err := b.tok.Encode(b.ctx, text)
		if err != nil {
			return "", nil, fmt.Errorf("tokenizer %s: encode: %w", b.tok.Name(), err)
		}
		if retries <= 0 || len(ids) == target {
			return text, ids, nil
		}
		if len(ids) > target {
			seq = ids[:target]
			continue
		}
		// The full slice expression makes append copy, so a tokenizer that
		// hands out shared slices is never written to.
		have := len(ids)
		seq = append(ids[:have:have], make([]int, target-have)...)
		fillRandom(rng, seq[have:], allowed)
	}
}

// oversample appends copies of randomly chosen requests until there are n,
// like vLLM's maybe_oversample_requests.
func (b *builder) oversample(reqs []Request, n int) []Request {
	base := len(reqs)
	if base == 0 || base >= n {
		return reqs
	}
	reqs = slices.Grow(reqs, n-base)
	for len(reqs) < n {
		reqs = append(reqs, reqs[b.rng.IntN(base)])
	}
	return reqs
}
