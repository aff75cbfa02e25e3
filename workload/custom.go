package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// maxLineOutputTokens bounds a line's own output length: larger values are
// typos, and no model generates that many tokens.
const maxLineOutputTokens = 1 << 24

// customPrompt is one line of a custom JSONL dataset.
type customPrompt struct {
	prompt string
	// outputLen is the line's own "output_tokens"/"max_tokens", 0 if unset.
	outputLen int
}

// custom is vLLM's CustomDataset: one {"prompt": ...} per line, shuffled,
// the first NumPrompts taken, oversampled by duplication if there are fewer.
// Prompts are sent as written: servebench applies no chat template (vLLM
// does unless --skip-chat-template), so counts are of the raw text.
func (b *builder) custom() ([]Request, error) {
	reqs, err := b.customDistinct()
	if err != nil || b.spec.Custom.NoOversample {
		return reqs, err
	}
	return b.oversample(reqs, b.spec.NumPrompts), nil
}

// customDistinct is the custom requests before oversampling: at most one per
// entry of the file.
func (b *builder) customDistinct() ([]Request, error) {
	o := b.spec.Custom
	f, err := openDataset(b.spec.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	prompts, err := readCustom(f, b.spec.Path)
	if err != nil {
		return nil, err
	}
	if !o.DisableShuffle {
		b.rng.Shuffle(len(prompts), func(i, j int) { prompts[i], prompts[j] = prompts[j], prompts[i] })
	}
	prompts = prompts[:min(len(prompts), b.spec.NumPrompts)]
	reqs := make([]Request, 0, b.spec.NumPrompts)
	for _, p := range prompts {
		if err := b.canceled(); err != nil {
			return nil, err
		}
		n, estimated, err := b.countTokens(p.prompt)
		if err != nil {
			return nil, err
		}
		outputLen := o.OutputLen
		if p.outputLen > 0 {
			outputLen = p.outputLen
		}
		reqs = append(reqs, Request{Prompt: p.prompt, PromptLen: n, PromptLenEstimated: estimated, MaxTokens: outputLen})
		b.report(len(reqs), len(prompts))
	}
	return reqs, nil
}

type customLine struct {
	Prompt       *string         `json:"prompt"`
	OutputTokens json.RawMessage `json:"output_tokens"`
	MaxTokens    json.RawMessage `json:"max_tokens"`
}

// readCustom reads a JSONL file of {"prompt": "...", "output_tokens": N}
// objects ("max_tokens" is accepted for "output_tokens"; blank lines are
// skipped). Errors name the file and the 1-based line.
func readCustom(r io.Reader, name string) ([]customPrompt, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var prompts []customPrompt
	for lineNo := 1; ; lineNo++ {
		line, readErr := br.ReadBytes('\n')
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			return nil, &datasetError{fmt.Sprintf("dataset file %q line %d: %v", name, lineNo, readErr), readErr}
		}
		if lineNo == 1 {
			line = bytes.TrimPrefix(line, []byte("\ufeff"))
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			p, err := parseCustomLine(trimmed)
			if err != nil {
				return nil, &datasetError{fmt.Sprintf("dataset file %q line %d: %v", name, lineNo, err), err}
			}
			prompts = append(prompts, p)
		}
		if readErr != nil {
			break
		}
	}
	if len(prompts) == 0 {
		return nil, fmt.Errorf("dataset file %q: no prompts (want one JSON object per line, like {\"prompt\": \"...\"})", name)
	}
	return prompts, nil
}

func parseCustomLine(line []byte) (customPrompt, error) {
	var l customLine
	if err := json.Unmarshal(line, &l); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field == "":
			return customPrompt{}, fmt.Errorf("found a JSON %s, want an object like {\"prompt\": \"...\"}", typeErr.Value)
		case errors.As(err, &typeErr):
			return customPrompt{}, fmt.Errorf("%q is a JSON %s, want %s", typeErr.Field, typeErr.Value, typeErr.Type)
		case errors.As(err, &syntaxErr):
			return customPrompt{}, fmt.Errorf("invalid JSON near column %d: %w", syntaxErr.Offset+1, err)
		}
		return customPrompt{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if l.Prompt == nil {
		return customPrompt{}, errors.New(`no "prompt" (each line must be an object like {"prompt": "..."})`)
	}
	if *l.Prompt == "" {
		return customPrompt{}, errors.New(`"prompt" is empty`)
	}
	p := customPrompt{prompt: *l.Prompt}
	for _, field := range []struct {
		key string
		raw json.RawMessage
	}{{"output_tokens", l.OutputTokens}, {"max_tokens", l.MaxTokens}} {
		if len(field.raw) == 0 || string(field.raw) == "null" {
			continue
		}
		n, err := strconv.ParseFloat(string(field.raw), 64)
		if err != nil || n != math.Trunc(n) || n < 1 || n > maxLineOutputTokens {
			return customPrompt{}, fmt.Errorf("%q is %s, want a whole number of tokens from 1 to %d", field.key, field.raw, maxLineOutputTokens)
		}
		if p.outputLen == 0 {
			p.outputLen = int(n)
		}
	}
	return p, nil
}
