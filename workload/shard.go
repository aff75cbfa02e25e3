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

// ScheduleHash fingerprints a whole schedule: every request's index,
// prompt (text and token IDs), prompt length, max tokens and arrival
// offset, in order. Shards of one run compute it over the full schedule
// before selecting their part, so equal hashes mean the shards split the
// same schedule.
func ScheduleHash(reqs []Request) string {
	h := sha256.New()
	h.Write([]byte("servebench-schedule-v1\x00"))
	writeInt(h, int64(len(reqs)))
	for i := range reqs {
		r := &reqs[i]
		writeInt(h, int64(r.Index))
		writeInt(h, int64(len(r.Prompt)))
		h.Write([]byte(r.Prompt))
		writeInt(h, int64(len(r.PromptIDs)))
		var b [4]byte
		for _, id := range r.PromptIDs {
			binary.LittleEndian.PutUint32(b[:], uint32(id))
			h.Write(b[:])
		}
		writeInt(h, int64(r.PromptLen))
		writeInt(h, int64(r.MaxTokens))
		writeInt(h, int64(r.Arrival))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func writeInt(h hash.Hash, v int64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	h.Write(b[:])
}
