package tokenizer

import (
	"context"
	"errors"
	"fmt"
)

// ErrTokenLimit is wrapped by every *LimitError.
var ErrTokenLimit = errors.New("too many tokens")

// LimitError reports a text that needs more tokens than allowed. AtLeast
// is a lower bound on its token count, not the count: encoding stopped as
// soon as the limit was certain to be exceeded.
type LimitError struct {
	Limit   int
	AtLeast int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("the text needs at least %d tokens, more than the limit of %d", e.AtLeast, e.Limit)
}

func (e *LimitError) Unwrap() error { return ErrTokenLimit }

// limitedEncoder is implemented by tokenizers that can stop early.
type limitedEncoder interface {
	encodeLimit(ctx context.Context, text string, limit int) ([]int, error)
}

// EncodeLimit encodes text, or fails with a *LimitError when it needs more
// than limit tokens. The built-in and tokenizer.json tokenizers refuse a
// text that is too long for the limit before encoding any of it and stop
// encoding once the limit is passed, so the cost of an oversized text is
// bounded by the limit rather than by its size. Other tokenizers encode
// in full and then compare. A negative limit means none.
func EncodeLimit(ctx context.Context, t Tokenizer, text string, limit int) ([]int, error) {
	if t == nil {
		return nil, ErrNoTokenizer
	}
	if le, ok := t.(limitedEncoder); ok {
		return le.encodeLimit(ctx, text, limit)
	}
	ids, err := t.Encode(ctx, text)
	if err != nil {
		return nil, err
	}
	if limit >= 0 && len(ids) > limit {
		return nil, &LimitError{Limit: limit, AtLeast: len(ids)}
	}
	return ids, nil
}
