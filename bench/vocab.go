package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/tokenizer"
)

// vocabChoice is the vocabulary random token-ID prompts draw from and
// where it came from, for the preamble.
type vocabChoice struct {
	size   int
	source string
}

// serverVocab asks the target for its vocabulary size (llama.cpp's
// /v1/models meta.n_vocab). An explicit --vocab-size is kept as given.
func serverVocab(ctx context.Context, cl *client.Client, model string, flagValue int, explicit bool) vocabChoice {
	if explicit {
		return vocabChoice{flagValue, "--vocab-size"}
	}
	probeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if n, err := cl.VocabSize(probeCtx, model); err == nil && n > 0 {
		return vocabChoice{n, "the server's /v1/models (meta.n_vocab)"}
	}
	return vocabChoice{flagValue, ""}
}

// final settles the vocabulary once the tokenizer is known, as the
// workload will use it: a local tokenizer's own vocabulary; else what the
// server reported (/tokenize's vocab_size, then /v1/models); else
// --vocab-size or its default.
func (v vocabChoice) final(tok tokenizer.Tokenizer) vocabChoice {
	const fallback = "default: the server did not say; pass --vocab-size if its vocabulary is smaller"
	switch t := tok.(type) {
	case nil:
	case *tokenizer.Server:
		if n := t.Info().VocabSize; n > 0 {
			return vocabChoice{n, "the server's /tokenize (vocab_size)"}
		}
		v.size = t.VocabSize()
	default:
		if n := t.VocabSize(); n > 0 {
			return vocabChoice{n, "tokenizer " + t.Name()}
		}
	}
	if v.source == "" {
		v.source = fallback
	}
	return v
}

func (v vocabChoice) preambleLine() string {
	return fmt.Sprintf("Token-ID vocabulary: %d (%s)\n", v.size, v.source)
}
