package main

import (
	"context"

	"github.com/servebench/servebench/tokenizer"
	"github.com/servebench/servebench/workload"
)

// simWorkload is sim's requests: a stream in arrival order, over the
// slice when the dataset is built whole.
type simWorkload struct {
	stream    *workload.Stream
	reqs      []workload.Request
	promptIDs workload.PromptSource
}

// buildSimWorkload makes sim's requests with their arrivals. promptIDs
// says the run needs prompt token IDs (prefix caching, prefix-aware
// routing); hashSchedule that a shard needs the schedule's hash. Random
// prompts, with or without a tokenizer, are generated one at a time as
// they arrive (workload.NewTokenizedStream: nothing held per request but
// what is in flight). Other datasets are built whole: a single engine
// then takes each prompt's IDs from a source while the request is in
// flight (4 bytes a request held instead of 4 a token), a fleet gets every
// request's IDs up front.
func buildSimWorkload(ctx context.Context, spec workload.Spec, arrivals workload.Arrivals, tok tokenizer.Tokenizer, promptIDs, single, hashSchedule bool) (simWorkload, error) {
	var w simWorkload
	if workload.Streamable(spec) {
		stream, err := workload.NewTokenizedStream(ctx, spec, arrivals, tok, promptIDs)
		if err == nil && hashSchedule {
			stream.HashSchedule()
		}
		w.stream = stream
		return w, err
	}
	var err error
	if single {
		w.reqs, w.promptIDs, err = workload.BuildCompact(ctx, spec, tok)
	} else {
		w.reqs, err = workload.Build(ctx, spec, tok)
	}
	if err != nil {
		return w, err
	}
	if tok != nil && promptIDs {
		// Exact token IDs make prefix-cache hits exact.
		for i := range w.reqs {
			if w.reqs[i].PromptIDs == nil {
				if ids, err := tok.Encode(ctx, w.reqs[i].Prompt); err == nil {
					w.reqs[i].PromptIDs = make([]int32, len(ids))
					for j, id := range ids {
						w.reqs[i].PromptIDs[j] = int32(id)
					}
				}
			}
		}
	}
	offsets, err := workload.Schedule(len(w.reqs), arrivals)
	if err != nil {
		return w, err
	}
	workload.Assign(w.reqs, offsets)
	w.stream = workload.StreamOf(w.reqs)
	return w, nil
}
