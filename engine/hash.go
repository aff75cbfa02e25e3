package engine

import (
	"slices"

	"github.com/servebench/servebench/internal/mix"
)

// Block hashes chain like vLLM's hash_block_tokens: a block's hash covers
// its parent's hash and its own tokens, so equal hashes mean equal prefixes.
// 64-bit hashes make a false hit practically impossible (about n²/2⁶⁵ for n
// cached blocks).

const (
	hashSeed   uint64 = 0x6a09e667f3bcc908 // vLLM's NONE_HASH role
	hashPrime  uint64 = 0x100000001b3
	goldenMix  uint64 = 0x9e3779b97f4a7c15
	tokenSalt  uint64 = 0xd6e8feb86659fd93
	nonzeroSub uint64 = 1
)

// generatedToken stands in for the ID of the output token at position p.
// Generated tokens have no real IDs; these are unique to the request and
// position, so a request can hit its own output blocks again after a
// recompute preemption (as in vLLM) but never another request's. The block
// hash mixes them, so no avalanche is needed here.
func (s *sequence) generatedToken(p int) uint64 {
	return s.id*goldenMix ^ uint64(p)*tokenSalt
}

// blockHash is the chained hash of s's i-th full block, computed on demand
// and remembered for the life of the request.
func (e *Engine) blockHash(s *sequence, i int) uint64 {
	bs := e.cfg.BlockSize
	if s.prompt == nil && s.deferred && len(s.hashes) <= i {
		s.prompt = e.cfg.PromptIDs(s.id)
	}
	if i >= cap(s.hashes) {
		e.adoptSpare(s)
	}
	if i >= cap(s.hashes) {
		// Room for every full prompt block at once: most requests hash
		// no others.
		s.hashes = slices.Grow(s.hashes, max(i+1, s.promptLen/bs)-len(s.hashes))
	}
	for j := len(s.hashes); j <= i; j++ {
		h := hashSeed
		if j > 0 {
			h = s.hashes[j-1]
		}
		from, to := j*bs, (j+1)*bs
		prompt := s.prompt[min(from, s.promptLen):min(to, s.promptLen)]
		for _, tok := range prompt {
			h = (h ^ uint64(tok)) * hashPrime
			h ^= h >> 29
		}
		for p := from + len(prompt); p < to; p++ {
			h = (h ^ s.generatedToken(p)) * hashPrime
			h ^= h >> 29
		}
		h = mix.Finalize(h)
		if h == 0 {
			h = nonzeroSub
		}
		s.hashes = append(s.hashes, h)
	}
	return s.hashes[i]
}
