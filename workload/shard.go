package workload

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// Shard is one part of a schedule split across several load generators:
// shard Index of Count, Index counted from 0 like Kubernetes'
// JOB_COMPLETION_INDEX.
//
// Every shard builds the whole seeded workload and schedule, then keeps
// the requests whose global index k has k mod Count == Index. Round-robin
// by index (not by time windows or random thinning) because:
//   - the union of all shards is the unsharded schedule, request for
//     request, with every arrival offset unchanged;
//   - each shard sends Count-th of the requests at rate/Count, and any
//     window of the schedule holds the same number of each shard's requests
//     give or take one, so no shard carries a burst alone;
//   - membership is a pure function of the index, so merge can check a
//     record's shard without the workload.
//
// A shard's own gaps are sums of Count consecutive gaps of the full
// schedule (Erlang-shaped for a Poisson schedule), but the server sees the
// union, which is the unsharded process exactly.
type Shard struct {
	Index, Count int
}

// ParseShard parses "I/N" (0 ≤ I < N), naming flag in its errors.
func ParseShard(flag, s string) (Shard, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, errI := strconv.Atoi(strings.TrimSpace(is))
	n, errN := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || errI != nil || errN != nil {
		return Shard{}, fmt.Errorf("%s %q: expected INDEX/COUNT with INDEX from 0, e.g. 0/4", flag, s)
	}
	sh := Shard{Index: i, Count: n}
	if err := sh.Validate(); err != nil {
		return Shard{}, fmt.Errorf("%s %q: %w", flag, s, err)
	}
	return sh, nil
}

// Validate checks 0 ≤ Index < Count.
func (s Shard) Validate() error {
	switch {
	case s.Count < 1:
		return fmt.Errorf("shard count %d: must be at least 1", s.Count)
	case s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("shard index %d: must be from 0 to %d (indices count from 0, like JOB_COMPLETION_INDEX)", s.Index, s.Count-1)
	}
	return nil
}

// String is "I/N".
func (s Shard) String() string { return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count) }

// Owns reports whether the request with global index i belongs to s.
func (s Shard) Owns(i int) bool { return i >= 0 && s.Count > 0 && i%s.Count == s.Index }

// Select returns the requests of reqs that s owns, by Request.Index, in
// schedule order. The returned requests share prompt storage with reqs.
func (s Shard) Select(reqs []Request) []Request {
	out := make([]Request, 0, len(reqs)/max(s.Count, 1)+1)
	for _, r := range reqs {
		if s.Owns(r.Index) {
			out = append(out, r)
		}
	}
	return out
}

// Size is how many of a schedule's total requests (indices 0 to total-1)
// s owns.
func (s Shard) Size(total int) int {
	if s.Count < 1 || s.Index >= total {
		return 0
	}
	return (total-s.Index-1)/s.Count + 1
}

// ScheduleHash fingerprints a whole schedule: every request's index,
// prompt (text and token IDs), prompt length, max tokens and arrival
// offset, in order. Shards of one run compute it over the full schedule
// before selecting their part, so equal hashes mean the shards split the
// same schedule.
func ScheduleHash(reqs []Request) string {
	h := newScheduleHasher(len(reqs))
	for i := range reqs {
		h.add(&reqs[i], reqs[i].PromptIDs)
	}
	return h.sum()
}

// scheduleHasher is ScheduleHash one request at a time.
type scheduleHasher struct {
	h   hash.Hash
	buf []byte
}

func newScheduleHasher(n int) *scheduleHasher {
	s := &scheduleHasher{h: sha256.New()}
	s.h.Write(binary.LittleEndian.AppendUint64([]byte("servebench-schedule-v1\x00"), uint64(n)))
	return s
}

// add hashes r with ids as its PromptIDs.
func (s *scheduleHasher) add(r *Request, ids []int32) {
	b := binary.LittleEndian.AppendUint64(s.buf[:0], uint64(r.Index))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(r.Prompt)))
	b = append(b, r.Prompt...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.LittleEndian.AppendUint32(b, uint32(id))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(r.PromptLen))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.MaxTokens))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Arrival))
	s.h.Write(b)
	s.buf = b[:0]
}

func (s *scheduleHasher) sum() string {
	return "sha256:" + hex.EncodeToString(s.h.Sum(nil))
}
