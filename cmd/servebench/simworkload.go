package main

import (
	"context"

	"github.com/servebench/servebench/tokenizer"
	"github.com/servebench/servebench/workload"
)

// buildSimWorkload makes sim's requests with their arrivals, as a stream
// in arrival order. promptIDs says the run needs prompt token IDs (prefix
// caching, prefix-aware routing); hashSchedule that a shard needs the
// schedule's hash. Every dataset but prefix_repetition is generated one
// request at a time as the simulation takes it
// (workload.NewTokenizedStream: nothing held per request but what is in
// flight); prefix_repetition, which shuffles its whole workload, is built.
func buildSimWorkload(ctx context.Context, spec workload.Spec, arrivals workload.Arrivals, tok tokenizer.Tokenizer, promptIDs, hashSchedule bool) (*workload.Stream, error) {
	if workload.Streamable(spec) {
		stream, err := workload.NewTokenizedStream(ctx, spec, arrivals, tok, promptIDs)
		if err == nil && hashSchedule {
			stream.HashSchedule()
		}
		return stream, err
	}
	reqs, err := workload.Build(ctx, spec, tok)
	if err != nil {
		return nil, err
	}
	if tok != nil && promptIDs {
		// Exact token IDs make prefix-cache hits exact.
		for i := range reqs {
			if reqs[i].PromptIDs == nil {
				if ids, err := tok.Encode(ctx, reqs[i].Prompt); err == nil {
					reqs[i].PromptIDs = make([]int32, len(ids))
					for j, id := range ids {
						reqs[i].PromptIDs[j] = int32(id)
					}
				}
			}
		}
	}
	offsets, err := workload.Schedule(len(reqs), arrivals)
	if err != nil {
		return nil, err
	}
	workload.Assign(reqs, offsets)
	return workload.StreamOf(reqs), nil
}
