package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// vLLM's is_valid_sequence limits for ShareGPT conversations.
const (
	shareGPTMinLen       = 4
	shareGPTMaxPromptLen = 1024
	shareGPTMaxTotalLen  = 2048
)

// conversation is the first exchange of a ShareGPT entry: vLLM sends the
// first turn and uses the second as the reference reply.
type conversation struct {
	prompt, reply string
}

type shareGPTEntry struct {
	Conversations []shareGPTTurn `json:"conversations"`
	// Messages is the OpenAI-style spelling ({"role", "content"}) some
	// ShareGPT exports use.
	Messages []shareGPTTurn `json:"messages"`
}

type shareGPTTurn struct {
	Value   string          `json:"value"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// shareGPT is vLLM's ShareGPTDataset: entries with at least two turns,
// shuffled, kept while they pass is_valid_sequence until NumPrompts are found,
// then oversampled by duplication.
func (b *builder) shareGPT() ([]Request, error) {
	reqs, err := b.shareGPTDistinct()
	if err != nil || b.spec.ShareGPT.NoOversample {
		return reqs, err
	}
	return b.oversample(reqs, b.spec.NumPrompts), nil
}

// shareGPTDistinct is the shareGPT requests before oversampling: at most one per
// entry of the file.
func (b *builder) shareGPTDistinct() ([]Request, error) {
	o := b.spec.ShareGPT
	path := b.spec.Path
	f, err := openDataset(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	convs, entries, err := readShareGPT(f, path)
	if err != nil {
		return nil, err
	}
	if !o.DisableShuffle {
		b.rng.Shuffle(len(convs), func(i, j int) { convs[i], convs[j] = convs[j], convs[i] })
	}
	var rejected [numFilterReasons]int
	reqs := make([]Request, 0, min(len(convs), b.spec.NumPrompts))
	for _, c := range convs {
		if len(reqs) >= b.spec.NumPrompts {
			break
		}
		if err := b.canceled(); err != nil {
			return nil, err
		}
		promptLen, estimated, err := b.countTokens(c.prompt)
		if err != nil {
			return nil, err
		}
		outputLen := o.OutputLen
		if outputLen == 0 {
			if outputLen, _, err = b.countTokens(c.reply); err != nil {
				return nil, err
			}
		}
		if reason := checkSequence(promptLen, outputLen, o.OutputLen > 0); reason != sequenceOK {
			rejected[reason]++
			continue
		}
		reqs = append(reqs, Request{Prompt: c.prompt, PromptLen: promptLen, PromptLenEstimated: estimated, MaxTokens: outputLen})
		b.report(len(reqs), b.spec.NumPrompts)
	}
	if len(reqs) == 0 {
		how := "counted with tokenizer " + b.tokenizerName()
		if b.tok == nil {
			how = "estimated as bytes/4 without a tokenizer"
		}
		return nil, fmt.Errorf("dataset file %q: 0 of %d entries passed vLLM's ShareGPT filters: "+
			"%d have fewer than 2 turns, %d prompts < %d tokens, %d replies < %d tokens, %d prompts > %d tokens, %d prompt+reply > %d tokens (tokens %s)",
			path, entries, entries-len(convs),
			rejected[promptTooShort], shareGPTMinLen, rejected[replyTooShort], shareGPTMinLen,
			rejected[promptTooLong], shareGPTMaxPromptLen, rejected[totalTooLong], shareGPTMaxTotalLen, how)
	}
	return reqs, nil
}

type filterReason int

const (
	sequenceOK filterReason = iota
	promptTooShort
	replyTooShort
	promptTooLong
	totalTooLong
	numFilterReasons
)

// checkSequence is vLLM's is_valid_sequence, naming the first rule broken.
func checkSequence(promptLen, outputLen int, skipMinOutput bool) filterReason {
	switch {
	case promptLen < shareGPTMinLen:
		return promptTooShort
	case !skipMinOutput && outputLen < shareGPTMinLen:
		return replyTooShort
	case promptLen > shareGPTMaxPromptLen:
		return promptTooLong
	case promptLen+outputLen > shareGPTMaxTotalLen:
		return totalTooLong
	}
	return sequenceOK
}

// readShareGPT streams a ShareGPT JSON array, keeping the first exchange of
// every entry with at least two turns. It returns those and the number of
// entries read. Errors name the file and the byte offset.
func readShareGPT(r io.Reader, name string) ([]conversation, int, error) {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return nil, 0, shareGPTSyntaxError(name, dec, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, 0, fmt.Errorf("dataset file %q: byte 0: found %s, want a JSON array of {\"conversations\": [...]} entries", name, describeToken(tok))
	}
	var convs []conversation
	entries := 0
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, 0, shareGPTSyntaxError(name, dec, err)
		}
		start := dec.InputOffset() - int64(len(raw))
		entries++
		var e shareGPTEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) {
				if typeErr.Field == "" {
					return nil, 0, fmt.Errorf("dataset file %q: byte %d: entry %d is a JSON %s, want an object with \"conversations\"", name, start, entries, typeErr.Value)
				}
				return nil, 0, fmt.Errorf("dataset file %q: near byte %d: entry %d: %s is a JSON %s, want %s", name, start+typeErr.Offset, entries, typeErr.Field, typeErr.Value, typeErr.Type)
			}
			return nil, 0, fmt.Errorf("dataset file %q: byte %d: entry %d: %w", name, start, entries, err)
		}
		c, ok, err := e.firstExchange()
		if err != nil {
			return nil, 0, fmt.Errorf("dataset file %q: byte %d: entry %d: %w", name, start, entries, err)
		}
		if ok {
			convs = append(convs, c)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, 0, shareGPTSyntaxError(name, dec, err)
	}
	if tok, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, 0, shareGPTSyntaxError(name, dec, err)
		}
		return nil, 0, fmt.Errorf("dataset file %q: near byte %d: found %s after the top-level array, want the end of the file", name, dec.InputOffset(), describeToken(tok))
	}
	return convs, entries, nil
}

func shareGPTSyntaxError(name string, dec *json.Decoder, err error) error {
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &syntaxErr):
		return &datasetError{fmt.Sprintf("dataset file %q: invalid JSON near byte %d: %v", name, syntaxErr.Offset, err), err}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &datasetError{fmt.Sprintf("dataset file %q: JSON ends early after byte %d (truncated file?)", name, dec.InputOffset()), err}
	}
	return &datasetError{fmt.Sprintf("dataset file %q: reading near byte %d: %v", name, dec.InputOffset(), err), err}
}

func describeToken(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return "an object"
		}
		return fmt.Sprintf("%q", string(t))
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// firstExchange returns the first two turns of the conversation; ok is false
// when it has fewer than two. In the "messages" spelling leading system
// messages are skipped, since they are not the user's prompt.
func (e *shareGPTEntry) firstExchange() (c conversation, ok bool, err error) {
	if e.Conversations != nil {
		if len(e.Conversations) < 2 {
			return c, false, nil
		}
		return conversation{e.Conversations[0].Value, e.Conversations[1].Value}, true, nil
	}
	turns := e.Messages
	for len(turns) > 0 && turns[0].Role == "system" {
		turns = turns[1:]
	}
	if len(turns) < 2 {
		return c, false, nil
	}
	var texts [2]string
	for i := range texts {
		if texts[i], err = contentText(turns[i].Content); err != nil {
			return c, false, fmt.Errorf("messages[%d].content: %w", i, err)
		}
	}
	return conversation{texts[0], texts[1]}, true, nil
}

// contentText reads an OpenAI message content: a string, null, or an array of
// parts whose "text" parts are joined with newlines (images are dropped).
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or an array of {\"type\": \"text\", \"text\": ...} parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" || (p.Type == "" && p.Text != "") {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}
