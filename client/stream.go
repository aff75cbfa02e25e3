package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/servebench/servebench/internal/textline"
	"github.com/servebench/servebench/metrics"
)

// maxTokensPerChunk bounds how many ITL entries one chunk may expand into,
// so a server reporting absurd usage cannot make the client allocate
// without limit.
const maxTokensPerChunk = 4096

// streamState turns one response into a Record. Pooled per Client: its
// buffers are reused, its per-request fields are reset by begin.
type streamState struct {
	framer *sseFramer
	parser chunkParser
	fields chunkFields
	text   []byte

	base time.Time
	rec  *metrics.Record

	events       int // data events, for error messages
	choiceChunks int // chunks with non-empty choices (TTFT, ITL, E2EL)
	textChunks   int // chunks whose choice carried text: the fallback token count
	last         time.Duration
	sawDone      bool
	sawFinish    bool
	// perChunkUsage holds while every token chunk so far carried
	// usage.completion_tokens (continuous usage stats); only then are
	// usage deltas tokens per chunk. A usage block on the last chunk only,
	// as llama.cpp sends, is a total and must not split the last gap.
	perChunkUsage  bool
	prevCompletion int64
	usageOutput    intField
	usagePrompt    intField
	usageCached    intField
}

func newStreamState() *streamState { return &streamState{framer: newSSEFramer()} }

func (s *streamState) begin(body io.Reader, base time.Time, rec *metrics.Record) {
	s.framer.reset(body, base)
	s.text = s.text[:0]
	s.base, s.rec = base, rec
	s.events, s.choiceChunks, s.textChunks, s.last = 0, 0, 0, 0
	s.sawDone, s.sawFinish = false, false
	s.perChunkUsage, s.prevCompletion = false, 0
	s.usageOutput, s.usagePrompt, s.usageCached = intField{}, intField{}, intField{}
}

// release drops references to the finished request and any buffer that a
// rare huge response grew, so the pool keeps only small buffers.
func (s *streamState) release() {
	s.rec = nil
	s.framer.src, s.framer.watch = nil, nil
	s.fields = chunkFields{}
	if cap(s.framer.buf) > 64<<10 {
		s.framer.buf = make([]byte, initialSSEBuffer)
	}
	if cap(s.framer.data) > 64<<10 {
		s.framer.data = nil
	}
	if cap(s.parser.scratch) > 64<<10 {
		s.parser.scratch = nil
	}
	if cap(s.text) > 1<<20 {
		s.text = nil
	}
}

func (s *streamState) where() string {
	if s.choiceChunks == 0 {
		return "before the first chunk"
	}
	if s.choiceChunks == 1 {
		return "while streaming (after 1 chunk)"
	}
	return fmt.Sprintf("while streaming (after %d chunks)", s.choiceChunks)
}

// fail records a failure seen at offset at from the run's base.
func (s *streamState) fail(at time.Duration, reason string) {
	s.rec.Latency = at - s.rec.Start
	s.rec.Error = reason
	s.rec.GeneratedText = string(s.text)
}

func (s *streamState) failRead(err error, c *Client, ctx, reqCtx context.Context) {
	s.fail(time.Since(s.base), c.describe(ctx, reqCtx, err, s.where()))
}

func (s *streamState) readSSE(c *Client, ctx, reqCtx context.Context) {
	var ev sseEvent
	for {
		err := s.framer.next(&ev)
		if err == io.EOF || (err != nil && s.sawDone) {
			break
		}
		if err != nil {
			if errors.Is(err, errEventTooLarge) {
				s.fail(time.Since(s.base), fmt.Sprintf("malformed SSE at chunk %d: %v", s.events+1, err))
				return
			}
			s.failRead(err, c, ctx, reqCtx)
			return
		}
		s.events++
		if s.sawDone {
			continue // vLLM reads to the end but ignores anything after [DONE]
		}
		if ev.IsError {
			s.fail(ev.At, fmt.Sprintf("server sent an error event at chunk %d: %s", s.events, s.errorText(ev.Data)))
			return
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue // keep-alive
		}
		if string(data) == "[DONE]" {
			s.sawDone = true
			continue
		}
		if err := s.parser.parse(data, &s.fields); err != nil {
			s.fail(ev.At, fmt.Sprintf("malformed JSON in SSE chunk %d: %v (data starts %q)", s.events, err, head(data, 60)))
			return
		}
		if !s.apply(&s.fields, ev.At) {
			return
		}
	}
	s.finish(time.Since(s.base))
}

// readJSON handles a non-streamed response: one JSON document whose arrival
// is both the first and the last token.
func (s *streamState) readJSON(c *Client, ctx, reqCtx context.Context) {
	data, err := s.framer.readAll()
	if err != nil {
		if errors.Is(err, errEventTooLarge) {
			s.fail(time.Since(s.base), fmt.Sprintf("JSON response body exceeds %d bytes", s.framer.maxEvent))
			return
		}
		s.failRead(err, c, ctx, reqCtx)
		return
	}
	at := s.framer.readAt
	if at == 0 {
		at = time.Since(s.base)
	}
	s.events = 1
	if err := s.parser.parse(data, &s.fields); err != nil {
		s.fail(at, fmt.Sprintf("malformed JSON response: %v (body starts %q)", err, head(data, 60)))
		return
	}
	if !s.apply(&s.fields, at) {
		return
	}
	s.sawDone = true
	s.finish(at)
}

// apply folds one parsed chunk into the record; false means the request
// failed.
func (s *streamState) apply(f *chunkFields, at time.Duration) bool {
	rec := s.rec
	if f.HasError || f.ObjectIsError {
		msg := f.ErrorMessage
		if !f.HasError {
			msg = f.TopMessage
		}
		text := textline.OneLine(string(head(msg, errorBodyBytes)), 0)
		if text == "" {
			text = "(no message)"
		}
		s.fail(at, fmt.Sprintf("server error at chunk %d: %s", s.events, text))
		return false
	}
	hasCompletion := f.HasUsage && f.CompletionTokens.OK
	if f.HasUsage {
		if f.CompletionTokens.OK {
			s.usageOutput = f.CompletionTokens
		}
		if f.PromptTokens.OK {
			s.usagePrompt = f.PromptTokens
		}
		if f.CachedTokens.OK {
			s.usageCached = f.CachedTokens
		}
	}
	if !f.HasChoices {
		return true
	}
	t := at - rec.Start
	s.choiceChunks++
	if s.choiceChunks == 1 {
		s.perChunkUsage = hasCompletion
	} else if !hasCompletion {
		s.perChunkUsage = false
	}
	var tokens int64
	if s.perChunkUsage {
		tokens = f.CompletionTokens.Value - s.prevCompletion
		s.prevCompletion = f.CompletionTokens.Value
		if tokens > maxTokensPerChunk {
			tokens = 0 // implausible: keep vLLM's one gap per chunk
		}
	}
	if s.choiceChunks == 1 {
		rec.TTFT = t
		if tokens > 1 {
			rec.FirstChunkTokens = int(tokens)
		}
	} else {
		gap := t - s.last
		if rec.ITL == nil {
			rec.ITL = make([]time.Duration, 0, min(max(rec.MaxTokens-1, 8), 256))
		}
		if tokens > 1 {
			k := time.Duration(tokens)
			each := gap / k
			for range tokens - 1 {
				rec.ITL = append(rec.ITL, each)
			}
			rec.ITL = append(rec.ITL, gap-each*(k-1)) // the remainder keeps the sum exact
		} else {
			rec.ITL = append(rec.ITL, gap)
		}
	}
	s.last = t
	rec.Latency = t

	// Most chunks carry one short field; skipping empty appends avoids
	// write barriers on s.text.
	if len(f.Text)+len(f.Delta.Content)+len(f.Delta.ReasoningContent)+len(f.Delta.Reasoning)+
		len(f.Message.Content)+len(f.Message.ReasoningContent)+len(f.Message.Reasoning) > 0 {
		s.text = append(s.text, f.Text...)
		s.appendMessage(&f.Delta)
		s.appendMessage(&f.Message)
		s.textChunks++
	}
	if f.HasFinishReason {
		s.sawFinish = true
	}
	return true
}

// appendMessage appends reasoning then content. Servers in transition send
// the same reasoning as both reasoning_content and reasoning; it counts once.
func (s *streamState) appendMessage(m *messageFields) {
	r := m.ReasoningContent
	if len(r) == 0 {
		r = m.Reasoning
	}
	if len(r)+len(m.Content) > 0 {
		s.text = append(append(s.text, r...), m.Content...)
	}
}

func (s *streamState) finish(at time.Duration) {
	rec := s.rec
	switch {
	case s.choiceChunks == 0:
		s.fail(at, "Never received a valid chunk to calculate TTFT.")
		return
	case !s.sawDone && !s.sawFinish:
		s.fail(at, fmt.Sprintf("stream closed before [DONE] or a finish_reason (after %d chunks)", s.choiceChunks))
		return
	}
	rec.Success = true
	rec.GeneratedText = string(s.text)
	switch out := s.usageOutput; {
	case out.OK && out.Value >= 0 && (out.Value > 0 || s.textChunks == 0):
		rec.OutputLen = int(out.Value)
		rec.OutputLenSource = "usage"
	default:
		rec.OutputLen = s.textChunks
		rec.OutputLenSource = "chunks"
	}
	if p := s.usagePrompt; p.OK && p.Value >= 0 {
		rec.PromptLen = int(p.Value)
	}
	if c := s.usageCached; c.OK && c.Value >= 0 {
		rec.CachedTokens = int(c.Value)
	}
}

// errorText is the message of an error event's data: the JSON error message
// when there is one, else the data itself.
func (s *streamState) errorText(data []byte) string {
	var f chunkFields
	if s.parser.parse(bytes.TrimSpace(data), &f) == nil {
		switch {
		case f.HasError && len(f.ErrorMessage) > 0:
			data = f.ErrorMessage
		case len(f.TopMessage) > 0:
			data = f.TopMessage
		}
	}
	if text := textline.OneLine(string(head(data, errorBodyBytes)), 0); text != "" {
		return text
	}
	return "(no message)"
}

func head(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
