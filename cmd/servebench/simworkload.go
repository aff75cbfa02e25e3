package main

import (
	"context"

	"github.com/servebench/servebench/tokenizer"
	"github.com/servebench/servebench/workload"
)

// buildSimWorkload builds sim's requests. A single engine takes each
// prompt's IDs from the returned source while the request is in flight
// (4 bytes a request held instead of 4 a token); topologies still get
// every request's IDs up front.
func buildSimWorkload(ctx context.Context, spec workload.Spec, tok tokenizer.Tokenizer, compact bool) ([]workload.Request, workload.PromptSource, error) {
	if !compact {
		reqs, err := workload.Build(ctx, spec, tok)
		return reqs, nil, err
	}
	return workload.BuildCompact(ctx, spec, tok)
}
