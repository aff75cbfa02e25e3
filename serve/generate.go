package serve

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/internal/jsonenc"
	"github.com/servebench/servebench/internal/mix"
	"github.com/servebench/servebench/tokenizer"
)

// response holds what every chunk of one request repeats.
type response struct {
	chat            bool
	coalesce        bool // V1 merges a slow reader's backlog into one chunk, as vLLM's RequestOutputCollector
	includeUsage    bool
	continuousUsage bool
	cachedDetails   bool
	promptTokens    int
	outputLen       int
	fault           FaultType
	faultSeq        uint64

	head      []byte // `data: {"id":...,"choices":[{"index":0,`
	usageHead []byte // `data: {"id":...,"choices":[],"usage":`
	id, model string
	created   int64
}

func (s *Server) generate(w http.ResponseWriter, r *http.Request, chat bool) {
	accepted := s.now()
	style := s.cfg.ErrorStyle
	var raw rawRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &raw); e != nil {
		writeAPIError(w, e, style)
		return
	}
	g, e := parseGenRequest(&raw, chat)
	if e != nil {
		writeAPIError(w, e, style)
		return
	}
	if !s.servesModel(g.model) {
		writeAPIError(w, notFound(fmt.Sprintf("The model `%s` does not exist.", g.model)), style)
		return
	}
	ids := g.promptIDs
	if g.hasPromptIDs {
		if e := checkTokenIDs(ids, s.promptVocab()); e != nil {
			writeAPIError(w, e, style)
			return
		}
	} else {
		var e *apiError
		if ids, e = s.encodePrompt(r.Context(), g.promptText, g.maxTokens); e != nil {
			writeAPIError(w, e, style)
			return
		}
	}
	limit, unlimited, e := s.checkLength(len(ids), g.maxTokens)
	if e != nil {
		writeAPIError(w, e, style)
		return
	}

	k := s.faultSeq.Add(1) - 1
	fault := s.cfg.Faults.pick(s.cfg.Seed, k)
	if fe := faultError(fault); fe != nil {
		writeAPIError(w, fe, style)
		return
	}
	if fault == FaultSlowFirstByte && !sleepCtx(r.Context(), s.cfg.Faults.SlowFirstByte) {
		return
	}

	textSeed := mix.SplitMix64(s.cfg.Seed ^ hashIDs(ids))
	if g.seed != nil {
		textSeed = mix.SplitMix64(s.cfg.Seed ^ mix.SplitMix64(uint64(*g.seed)^0x5eed))
	}
	rng := rand.New(rand.NewPCG(textSeed, 0x6f75746c656e))
	outLen, hitLimit := s.cfg.OutputLen.outputLen(rng, limit, min(g.minTokens, limit), g.ignoreEOS, unlimited)

	req := engine.Request{ID: s.nextID.Add(1), Prompt: engineTokenIDs(ids), PromptLen: len(ids), MaxTokens: outLen}
	st := newStream(req, limit, hitLimit, textSeed)
	rs := s.newResponse(r, g, st, len(ids), outLen, fault, k)
	st.req.Arrival = s.now()
	st.remotePrefill = g.remotePrefill
	st.accepted, st.acceptedAt = true, accepted
	st.chat = chat
	if e := s.awaitKV(r, &st.req); e != nil {
		writeAPIError(w, e, style)
		return
	}
	if !s.awaitKVTransfer(r.Context(), st) {
		return
	}
	s.sendKVWhenComputed(r, st)
	if err := s.submit(st); err != nil {
		writeAPIError(w, s.streamError(err), style)
		return
	}
	if g.stream {
		s.writeStream(w, r, st, rs)
	} else {
		s.writeFull(w, r, st, rs)
	}
}

// promptTokenCap is how far a prompt is tokenized: twice max_model_len.
// vLLM tokenizes first and checks the length after, so one 8 MB prompt
// cost it (and cost servebench) a gigabyte and seconds of CPU. Here a
// prompt whose length alone proves it over the cap is refused before
// encoding, and encoding stops at the first token past the cap. Up to the
// cap the count is exact, so vLLM's error text comes out unchanged for
// prompts that are a little too long; beyond it the text says "at least".
func (s *Server) promptTokenCap() int { return 2 * s.cfg.Engine.MaxModelLen }

// encodePrompt tokenizes a prompt, at most to promptTokenCap.
func (s *Server) encodePrompt(ctx context.Context, text string, maxTokens int) ([]int, *apiError) {
	ids, err := tokenizer.EncodeLimit(ctx, s.tok, text, s.promptTokenCap())
	var tooLong *tokenizer.LimitError
	switch {
	case errors.As(err, &tooLong):
		return nil, s.lengthError(tooLong.AtLeast, true, maxTokens)
	case err != nil:
		return nil, badParam("prompt", "Could not tokenize the prompt: %v", err)
	}
	return ids, nil
}

// checkLength applies vLLM's OpenAI-layer context check (serving_engine
// _validate_input) and returns how many tokens the request may generate.
func (s *Server) checkLength(promptLen, maxTokens int) (limit int, unlimited bool, _ *apiError) {
	maxLen := s.cfg.Engine.MaxModelLen
	if promptLen == 0 {
		return 0, false, badParam("prompt", "The prompt is empty: send at least one token.")
	}
	if maxTokens == 0 {
		if promptLen >= maxLen {
			return 0, false, s.lengthError(promptLen, false, maxTokens)
		}
		return maxLen - promptLen, true, nil
	}
	if promptLen+maxTokens > maxLen {
		return 0, false, s.lengthError(promptLen, false, maxTokens)
	}
	return maxTokens, false, nil
}

// lengthError is vLLM's context-length message; atLeast marks a prompt
// whose count is a lower bound because encoding stopped early.
func (s *Server) lengthError(promptLen int, atLeast bool, maxTokens int) *apiError {
	maxLen := s.cfg.Engine.MaxModelLen
	qualifier := ""
	if atLeast {
		qualifier = "at least "
	}
	if maxTokens == 0 {
		return badRequest("This model's maximum context length is %d tokens. However, you requested %s%d tokens in the messages, Please reduce the length of the messages.", maxLen, qualifier, promptLen)
	}
	return badRequest("This model's maximum context length is %d tokens. However, you requested %s%d tokens (%s%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
		maxLen, qualifier, promptLen+maxTokens, qualifier, promptLen, maxTokens)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Server) newResponse(r *http.Request, g *genRequest, st *stream, promptTokens, outLen int, fault FaultType, k uint64) *response {
	prefix, object := "cmpl-", "text_completion"
	if g.chat {
		prefix, object = "chatcmpl-", "chat.completion.chunk"
		if !g.stream {
			object = "chat.completion"
		}
	}
	base := r.Header.Get("X-Request-Id")
	if base == "" {
		base = fmt.Sprintf("%016x%016x", mix.SplitMix64(s.instanceNonce^st.req.ID), mix.SplitMix64(st.textSeed^st.req.ID))
	}
	rs := &response{
		chat:            g.chat,
		coalesce:        s.cfg.Engine.Version != engine.V0,
		includeUsage:    g.includeUsage,
		continuousUsage: g.includeUsage && g.continuousUsage,
		cachedDetails:   s.cfg.EnablePromptTokensDetails,
		promptTokens:    promptTokens,
		outputLen:       outLen,
		fault:           fault,
		faultSeq:        k,
		id:              prefix + base,
		model:           g.model,
		created:         time.Now().Unix(),
	}
	if rs.model == "" {
		rs.model = s.cfg.ServedModelNames[0]
	}
	top := make([]byte, 0, 128)
	top = append(top, `data: {"id":`...)
	top = jsonenc.AppendString(top, rs.id)
	top = append(top, `,"object":"`...)
	top = append(top, object...)
	top = append(top, `","created":`...)
	top = strconv.AppendInt(top, rs.created, 10)
	top = append(top, `,"model":`...)
	top = jsonenc.AppendString(top, rs.model)
	rs.head = append(append([]byte(nil), top...), `,"choices":[{"index":0,`...)
	rs.usageHead = append(top, `,"choices":[],"usage":`...)
	return rs
}

func (rs *response) appendUsage(b []byte, completion, cached int) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(rs.promptTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(rs.promptTokens+completion), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	if rs.cachedDetails && cached > 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(cached), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendRoleChunk is the chat stream's first chunk, sent with the first
// token as vLLM does (its first output arrives after the prefill).
func (rs *response) appendRoleChunk(b []byte, cached int) []byte {
	b = append(b, rs.head...)
	b = append(b, `"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
	if rs.continuousUsage {
		b = append(b, `,"usage":`...)
		b = rs.appendUsage(b, 0, cached)
	}
	return append(b, "}\n\n"...)
}

// appendTokenChunk appends one chunk carrying generated tokens
// [from, from+n); finish is "" or the finish reason of the final chunk.
func (rs *response) appendTokenChunk(b []byte, s *Server, st *stream, from, n int, finish string, cached int) []byte {
	b = append(b, rs.head...)
	if rs.chat {
		b = append(b, `"delta":{"content":"`...)
	} else {
		b = append(b, `"text":"`...)
	}
	b = s.text.appendText(b, st.textSeed, from, n)
	if rs.chat {
		b = append(b, `"},"logprobs":null,"finish_reason":`...)
	} else {
		b = append(b, `","logprobs":null,"finish_reason":`...)
	}
	switch {
	case finish != "":
		b = append(b, '"')
		b = append(b, finish...)
		b = append(b, `","stop_reason":null}]`...)
	case rs.chat:
		b = append(b, `null}]`...)
	default:
		b = append(b, `null,"stop_reason":null}]`...)
	}
	switch {
	case rs.continuousUsage:
		b = append(b, `,"usage":`...)
		b = rs.appendUsage(b, from+n, cached)
	case !rs.chat:
		b = append(b, `,"usage":null`...)
	}
	return append(b, "}\n\n"...)
}

const doneEvent = "data: [DONE]\n\n"

// writeStream streams a request's tokens as server-sent events.
func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, st *stream, rs *response) {
	ctx := r.Context()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		s.abort(st)
		return
	}
	dropAt := -1
	if rs.fault == FaultDrop {
		dropAt = dropAfter(s.cfg.Seed, rs.faultSeq, rs.outputLen)
	}
	rcv := newReceiver(s, st)
	var (
		buf           []byte
		batches       []tokenBatch
		sent          int
		roleSent      = !rs.chat
		deadlineSetAt time.Time
	)
	// The client going away wakes the handler through the same one-slot
	// channel as new tokens: a chunk then costs one channel receive and a
	// flag load, not a two-channel select that locks both channels on
	// every token.
	var clientGone atomic.Bool
	stopWake := context.AfterFunc(ctx, func() {
		clientGone.Store(true)
		st.signal()
	})
	defer stopWake()
	for {
		rcv.wait()
		if clientGone.Load() {
			s.abort(st)
			return
		}
		var cached int
		var done bool
		var err error
		batches, cached, done, err = rcv.take()
		n := 0
		for _, b := range batches {
			n += b.n
		}
		if n == 0 && !done {
			continue
		}
		buf = buf[:0]
		if dropAt >= 0 && (done || sent+n >= dropAt) {
			s.dropStream(w, rc, st, rs, buf, sent, dropAt-sent, cached, roleSent)
			return
		}
		if done && errors.Is(err, errAborted) {
			return
		}
		buf = rs.appendEvents(buf, s, st, sent, batches, n, cached, done, err, !roleSent)
		roleSent = roleSent || n > 0 || (done && err == nil)
		sent += n
		if !s.sendEvents(w, rc, buf, &deadlineSetAt) {
			s.abort(st)
			return
		}
		written := s.now()
		for _, b := range batches {
			s.lag.record(written-b.due-rcv.delivery, b.n)
		}
		if done {
			return
		}
	}
}

// sendEvents writes and flushes buf under the stream's write deadline;
// false means the client is gone.
func (s *Server) sendEvents(w http.ResponseWriter, rc *http.ResponseController, buf []byte, deadlineSetAt *time.Time) bool {
	// Moving the deadline costs a runtime timer update; refreshing it once
	// half of it has passed keeps the cut-off between 0.5× and 1×
	// StreamWriteTimeout.
	if now := time.Now(); now.Sub(*deadlineSetAt) > s.cfg.StreamWriteTimeout/2 {
		_ = rc.SetWriteDeadline(now.Add(s.cfg.StreamWriteTimeout))
		*deadlineSetAt = now
	}
	if _, err := w.Write(buf); err != nil {
		return false
	}
	return rc.Flush() == nil
}

// dropStream is an injected drop: it sends the keep tokens that come
// before the drop point, then cuts the connection.
func (s *Server) dropStream(w http.ResponseWriter, rc *http.ResponseController, st *stream, rs *response, buf []byte, sent, keep, cached int, roleSent bool) {
	if keep > 0 {
		if !roleSent {
			buf = rs.appendRoleChunk(buf, cached)
		}
		buf = rs.appendTokenChunk(buf, s, st, sent, keep, "", cached)
		_, _ = w.Write(buf)
		_ = rc.Flush()
	}
	s.abort(st)
	dropConnection(w)
}

// appendEvents appends one wake-up's events after sent tokens: the role
// chunk when roleDue and there is something to follow it, the n new
// tokens of batches (a chunk for each batch, vLLM V0's RequestOutput of
// one step or of a multi-step group; one chunk for them all when
// coalescing) and, once the stream is done, its error or usage and
// [DONE].
func (rs *response) appendEvents(buf []byte, s *Server, st *stream, sent int, batches []tokenBatch, n, cached int, done bool, err error, roleDue bool) []byte {
	if roleDue && (n > 0 || (done && err == nil)) {
		buf = rs.appendRoleChunk(buf, cached)
	}
	finish := ""
	if done && err == nil {
		finish = st.finishReason()
	}
	switch {
	case n == 0 && finish != "":
		buf = rs.appendTokenChunk(buf, s, st, sent, 0, finish, cached)
	case rs.coalesce:
		buf = rs.appendTokenChunk(buf, s, st, sent, n, finish, cached)
	default:
		// push makes a batch only for tokens, so none is empty.
		at := sent
		for i, b := range batches {
			f := ""
			if i == len(batches)-1 {
				f = finish
			}
			buf = rs.appendTokenChunk(buf, s, st, at, b.n, f, cached)
			at += b.n
		}
	}
	if !done {
		return buf
	}
	if err != nil {
		buf = append(buf, streamErrorEvent(s.streamError(err), s.cfg.ErrorStyle)...)
	} else if rs.includeUsage {
		buf = append(buf, rs.usageHead...)
		buf = rs.appendUsage(buf, sent+n, cached)
		buf = append(buf, "}\n\n"...)
	}
	return append(buf, doneEvent...)
}

// writeFull answers a non-streaming request once it has finished.
func (s *Server) writeFull(w http.ResponseWriter, r *http.Request, st *stream, rs *response) {
	rcv := newReceiver(s, st)
	var (
		cached int
		done   bool
		err    error
	)
	for !done {
		if !rcv.waitCtx(r.Context()) {
			s.abort(st)
			return
		}
		_, cached, done, err = rcv.take()
	}
	if err != nil {
		if !errors.Is(err, errAborted) {
			writeAPIError(w, s.streamError(err), s.cfg.ErrorStyle)
		}
		return
	}
	if rs.fault == FaultDrop {
		dropConnection(w)
		return
	}
	st.mu.Lock()
	produced := st.produced
	st.mu.Unlock()
	b := make([]byte, 0, 256+produced*8)
	b = append(b, rs.head[len("data: "):len(rs.head)-len(`,"choices":[{"index":0,`)]...)
	b = append(b, `,"choices":[{"index":0,`...)
	if rs.chat {
		b = append(b, `"message":{"role":"assistant","reasoning_content":null,"content":"`...)
		b = s.text.appendText(b, st.textSeed, 0, produced)
		b = append(b, `","tool_calls":[]},"logprobs":null,"finish_reason":"`...)
	} else {
		b = append(b, `"text":"`...)
		b = s.text.appendText(b, st.textSeed, 0, produced)
		b = append(b, `","logprobs":null,"finish_reason":"`...)
	}
	b = append(b, st.finishReason()...)
	b = append(b, `","stop_reason":null`...)
	if !rs.chat {
		b = append(b, `,"prompt_logprobs":null`...)
	}
	b = append(b, `}],"usage":`...)
	b = rs.appendUsage(b, produced, cached)
	if rs.chat {
		b = append(b, `,"prompt_logprobs":null`...)
	}
	b = append(b, '}')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// streamError maps a request's failure to the status and message a client
// sees.
func (s *Server) streamError(err error) *apiError {
	switch {
	case errors.Is(err, errServerClosed):
		return &apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: "The server is shutting down; retry against another instance."}
	case errors.Is(err, engine.ErrBadRequest):
		return badRequest("%s", err.Error())
	case errors.Is(err, engine.ErrNoSwapSpace):
		return &apiError{Status: http.StatusInternalServerError, Type: "EngineDeadError", Message: err.Error()}
	}
	return &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: err.Error()}
}

// dropConnection closes the client's connection without finishing the
// response, as a crashed server or a broken network would.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2 cannot hijack; aborting the handler resets the stream.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// engineTokenIDs narrows token IDs (validated against the vocabulary) to the
// engine's int32 form.
func engineTokenIDs(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}
