package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoTokenizer is returned by Count when no tokenizer is configured
// (New returns a nil Tokenizer for an empty spec).
var ErrNoTokenizer = errors.New("no tokenizer configured")

// Options configure New. Only the server tokenizer uses them.
type Options struct {
	// BaseURL is the target server's root (e.g. http://127.0.0.1:8000,
	// without /v1), used by the spec "server".
	BaseURL string
	// Model is sent as "model" to /tokenize and /detokenize.
	Model string
	// HTTPClient carries the requests; nil means a plain client without a
	// timeout, bounded by each call's context.
	HTTPClient *http.Client
	// Header is added to every request, e.g. Authorization.
	Header http.Header
	// VocabSize is the server tokenizer's vocabulary size when the server
	// does not report one (vLLM does not).
	VocabSize int
	// SpecialIDs are the server tokenizer's special token IDs; servers do
	// not report them.
	SpecialIDs []int
}

// New resolves the value of a --tokenizer flag:
//   - "" means no tokenizer: it returns nil, nil;
//   - "server", or an http:// or https:// URL, tokenizes through the
//     server's /tokenize and /detokenize (Options.BaseURL for "server");
//   - a name from Builtins is an encoding compiled into the binary;
//   - anything else is a tokenizer.json, or a directory containing one.
//
// Nothing is ever downloaded.
func New(ctx context.Context, spec string, opts Options) (Tokenizer, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("tokenizer %q: %w", spec, err)
	}
	switch {
	case spec == "":
		return nil, nil
	case spec == "server":
		if opts.BaseURL == "" {
			return nil, errors.New(`tokenizer "server": no server URL; set the target's base URL (e.g. http://127.0.0.1:8000) or pass the URL as the tokenizer`)
		}
		return newServerTokenizer(opts.BaseURL, opts)
	case strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://"):
		return newServerTokenizer(spec, opts)
	case isBuiltin(spec):
		return Builtin(spec)
	}
	return loadPath(spec)
}

// newServerTokenizer keeps a nil *Server out of the Tokenizer interface.
func newServerTokenizer(base string, opts Options) (Tokenizer, error) {
	s, err := NewServer(base, opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func specHelp() string {
	return `pass a tokenizer.json path, a directory containing one, "server", or one of ` + strings.Join(builtinNames, ", ")
}

// specError reads as one line for the user and still matches
// errors.Is(err, fs.ErrNotExist).
type specError struct {
	msg string
	err error
}

func (e *specError) Error() string { return e.msg }
func (e *specError) Unwrap() error { return e.err }

func loadPath(spec string) (Tokenizer, error) {
	info, err := os.Stat(spec)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &specError{fmt.Sprintf("tokenizer %q: no such file; %s", spec, specHelp()), err}
	}
	if err != nil {
		return nil, fmt.Errorf("tokenizer %q: %w", spec, err)
	}
	if info.IsDir() {
		if _, err := os.Stat(filepath.Join(spec, "tokenizer.json")); errors.Is(err, fs.ErrNotExist) {
			return nil, &specError{fmt.Sprintf("tokenizer %q: directory has no tokenizer.json; %s", spec, specHelp()), err}
		}
	}
	return LoadTokenizerJSON(spec)
}

// Count returns how many tokens t encodes text into.
func Count(ctx context.Context, t Tokenizer, text string) (int, error) {
	if t == nil {
		return 0, ErrNoTokenizer
	}
	ids, err := t.Encode(ctx, text)
	if err != nil {
		return 0, err
	}
	return len(ids), nil
}
