package main

import (
	"context"

	"github.com/servebench/servebench/tokenizer"
	"github.com/servebench/servebench/workload"
)

// simWorkload is sim's requests: a stream for the single engine, and the
// slice too when a topology or a shard needs every request up front.
type simWorkload struct {
	stream    *workload.Stream
	reqs      []workload.Request
	promptIDs workload.PromptSource
}

// buildSimWorkload builds sim's requests with their arrivals. A single
// engine without a shard gets random prompts generated one at a time as
// they arrive (workload.NewStream: nothing held per request), or else
// takes each prompt's IDs from a source while the request is in flight (4
// bytes a request held instead of 4 a token); topologies still get every
// request's IDs up front.
func buildSimWorkload(ctx context.Context, spec workload.Spec, arrivals workload.Arrivals, tok tokenizer.Tokenizer, caching, single bool) (simWorkload, error) {
	var w simWorkload
	if single && workload.Streamable(spec, tok != nil) {
		stream, err := workload.NewStream(ctx, spec, arrivals, caching)
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
	if tok != nil && caching {
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
