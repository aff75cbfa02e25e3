package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// rawRequest is the union of the /v1/completions and /v1/chat/completions
// fields servebench reads. Pointers tell "absent or null" (vLLM's default)
// from a zero value. Unknown fields are accepted, as vLLM does.
type rawRequest struct {
	Model               *string           `json:"model"`
	Prompt              json.RawMessage   `json:"prompt"`
	Messages            json.RawMessage   `json:"messages"`
	Stream              *bool             `json:"stream"`
	StreamOptions       *streamOptions    `json:"stream_options"`
	MaxTokens           *int64            `json:"max_tokens"`
	MaxCompletionTokens *int64            `json:"max_completion_tokens"`
	MinTokens           *int64            `json:"min_tokens"`
	IgnoreEOS           *bool             `json:"ignore_eos"`
	N                   *int64            `json:"n"`
	BestOf              *int64            `json:"best_of"`
	UseBeamSearch       *bool             `json:"use_beam_search"`
	Echo                *bool             `json:"echo"`
	Seed                *int64            `json:"seed"`
	Stop                json.RawMessage   `json:"stop"`
	KVTransferParams    *kvTransferParams `json:"kv_transfer_params"`
	sampling
}

// sampling holds the sampling parameters. The emulator's text does not
// depend on them, but vLLM rejects values out of range before a request
// reaches the engine, and a client under test must see the same 400.
type sampling struct {
	Temperature       *float64 `json:"temperature"`
	TopP              *float64 `json:"top_p"`
	TopK              *int64   `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	PresencePenalty   *float64 `json:"presence_penalty"`
	FrequencyPenalty  *float64 `json:"frequency_penalty"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	// Logprobs is an integer on /v1/completions and a boolean on chat.
	Logprobs       json.RawMessage `json:"logprobs"`
	TopLogprobs    *int64          `json:"top_logprobs"`
	PromptLogprobs *int64          `json:"prompt_logprobs"`
}

type streamOptions struct {
	IncludeUsage         *bool `json:"include_usage"`
	ContinuousUsageStats *bool `json:"continuous_usage_stats"`
}

// genRequest is a validated generation request, before tokenization.
type genRequest struct {
	chat  bool
	model string
	// Exactly one of promptText and promptIDs is set.
	promptText   string
	promptIDs    []int
	hasPromptIDs bool

	stream          bool
	includeUsage    bool
	continuousUsage bool
	// maxTokens is the requested limit; 0 when absent (chat: the rest of
	// the context window, as vLLM).
	maxTokens int
	minTokens int
	ignoreEOS bool
	seed      *int64
	// remotePrefill is kv_transfer_params.do_remote_prefill: a P/D decode
	// request whose prompt was prefilled elsewhere.
	remotePrefill bool
}

const completionsDefaultMaxTokens = 16 // vLLM's CompletionRequest default, as OpenAI's

// decodeBody reads a JSON object from r's body, bounded by limit. A body over
// the limit is a 413; malformed JSON and wrong types are 400s naming the field.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, into any) *apiError {
	body, e := readBody(w, r, limit)
	if e != nil {
		return e
	}
	return decodeJSON(body, into)
}

// readBody reads r's body, bounded by limit in size and by the read
// deadline bodyDeadline armed (a slow client gets a 408). The deadline is
// lifted once the body is in: it must not cut a long streamed response,
// during which net/http keeps reading the connection to notice the client
// leaving (it lifts deadlines itself when it starts that read; this does
// not depend on it).
//
// Memory: a body announced over the limit is refused unread; one of known
// size is read into a buffer of that size; one of unknown size (chunked) is
// read in segments that are never copied while it grows, so refusing it
// costs at most the limit (a doubling buffer reached twice the limit, and
// held the old half while copying, before the limit fired).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *apiError) {
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		return nil, bodyTooLarge(limit)
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	var data []byte
	var err error
	if r.ContentLength >= 0 {
		data = make([]byte, r.ContentLength)
		_, err = io.ReadFull(body, data)
		if err == nil {
			// net/http stops a body at its Content-Length; this only notices
			// a body that ends early, which ReadFull reports.
			_, err = body.Read(make([]byte, 1))
			if err == io.EOF {
				err = nil
			}
		}
	} else {
		data, err = readSegments(body, limit)
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return nil, bodyTooLarge(limit)
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			return nil, &apiError{Status: http.StatusRequestTimeout, Type: "RequestTimeout",
				Message: "The request body did not arrive in time; send it at once, or raise the server's body read timeout."}
		}
		return nil, badRequest("Could not read the request body: %v", err)
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	return data, nil
}

func bodyTooLarge(limit int64) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "RequestEntityTooLarge",
		Message: fmt.Sprintf("Request body exceeds the limit of %d bytes; send a smaller request or raise --max-request-body-bytes.", limit)}
}

// readSegments reads r to its end into segments of growing size (4 KiB to
// 1 MiB), then joins them once: no byte is copied while the body grows. No
// segment reaches past limit+1 bytes in all, the byte that shows r is over.
func readSegments(r io.Reader, limit int64) ([]byte, error) {
	const first, largest = 4 << 10, 1 << 20
	var segments [][]byte
	size, total := first, 0
	for {
		seg := make([]byte, max(1, min(int64(size), limit+1-int64(total))))
		n, err := io.ReadFull(r, seg)
		segments = append(segments, seg[:n])
		total += n
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
		size = min(2*size, largest)
	}
	if len(segments) == 1 {
		return segments[0], nil
	}
	data := make([]byte, 0, total)
	for _, seg := range segments {
		data = append(data, seg...)
	}
	return data, nil
}

// bodyDeadline arms a read deadline for the body of every request that has
// one: without it a client sending a byte every few seconds holds its
// connection and handler forever (slowloris). Doing it in the handler,
// rather than through http.Server.ReadTimeout, protects any server the
// Handler is mounted on. Handlers lift it in readBody.
func bodyDeadline(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
		}
		next.ServeHTTP(w, r)
	})
}

func decodeJSON(body []byte, into any) *apiError {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return badRequest("JSON decode error: the request body is empty; send a JSON object.")
	}
	if trimmed[0] != '{' {
		return badRequest("JSON decode error: the request body must be a JSON object, got %s.", jsonKind(trimmed[0]))
	}
	if err := json.Unmarshal(trimmed, into); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return badRequest("JSON decode error at byte %d: %v.", syn.Offset, syn)
		case errors.As(err, &typ):
			// Fields of embedded structs come back with the struct's name.
			field := strings.TrimPrefix(typ.Field, "sampling.")
			if field == "" {
				field = "body"
			}
			want := goTypeName(typ.Type.String())
			if msg, ok := pydanticParsing[want]; ok && typ.Value == "string" {
				return badParam(field, "%s: %s.", field, msg)
			}
			return badParam(field, "Invalid type for '%s': expected %s, got %s.", field, want, typ.Value)
		default:
			return badRequest("JSON decode error: %v.", err)
		}
	}
	return nil
}

// pydanticParsing is the message vLLM's request models (pydantic) give for
// a string where a number, integer or boolean belongs.
var pydanticParsing = map[string]string{
	"a number":   "Input should be a valid number, unable to parse string as a number",
	"an integer": "Input should be a valid integer, unable to parse string as an integer",
	"a boolean":  "Input should be a valid boolean, unable to interpret input",
}

func jsonKind(c byte) string {
	switch {
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return "invalid JSON"
}

func goTypeName(t string) string {
	t = strings.TrimPrefix(t, "*")
	switch {
	case strings.HasPrefix(t, "int"):
		return "an integer"
	case t == "bool":
		return "a boolean"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "serve.streamOptions"):
		return "an object"
	}
	return t
}

// parseGenRequest validates the body of a completions (chat=false) or chat
// completions request. Length checks against max_model_len happen after
// tokenization.
func parseGenRequest(raw *rawRequest, chat bool) (*genRequest, *apiError) {
	g := &genRequest{chat: chat}
	if raw.Model != nil {
		g.model = *raw.Model
	}
	if raw.Stream != nil {
		g.stream = *raw.Stream
	}
	if raw.StreamOptions != nil {
		if !g.stream {
			return nil, badParam("stream_options", "Stream options can only be defined when `stream=True`.")
		}
		g.includeUsage = raw.StreamOptions.IncludeUsage != nil && *raw.StreamOptions.IncludeUsage
		g.continuousUsage = raw.StreamOptions.ContinuousUsageStats != nil && *raw.StreamOptions.ContinuousUsageStats
	}
	if raw.N != nil && *raw.N != 1 {
		if *raw.N < 1 {
			return nil, badParam("n", "n must be at least 1, got %d.", *raw.N)
		}
		return nil, badParam("n", "n=%d is not supported: servebench serve generates one sequence per request (n=1).", *raw.N)
	}
	if raw.BestOf != nil && *raw.BestOf > 1 {
		return nil, badParam("best_of", "best_of=%d is not supported: servebench serve generates one sequence per request.", *raw.BestOf)
	}
	if raw.UseBeamSearch != nil && *raw.UseBeamSearch {
		return nil, badParam("use_beam_search", "use_beam_search is not supported by servebench serve.")
	}
	if raw.Echo != nil && *raw.Echo {
		return nil, badParam("echo", "echo is not supported by servebench serve.")
	}
	if err := checkStop(raw.Stop); err != nil {
		return nil, err
	}
	if err := raw.sampling.check(chat); err != nil {
		return nil, err
	}

	maxTokens := raw.MaxTokens
	if chat && raw.MaxCompletionTokens != nil {
		maxTokens = raw.MaxCompletionTokens
	}
	switch {
	case maxTokens != nil:
		if *maxTokens < 1 {
			return nil, badParam("max_tokens", "max_tokens must be at least 1, got %d.", *maxTokens)
		}
		if *maxTokens > 1<<31 {
			return nil, badParam("max_tokens", "max_tokens must be at most %d, got %d.", 1<<31, *maxTokens)
		}
		g.maxTokens = int(*maxTokens)
	case !chat:
		g.maxTokens = completionsDefaultMaxTokens
	}
	if raw.MinTokens != nil {
		if *raw.MinTokens < 0 {
			return nil, badParam("min_tokens", "min_tokens must be greater than or equal to 0, got %d.", *raw.MinTokens)
		}
		if g.maxTokens > 0 && *raw.MinTokens > int64(g.maxTokens) {
			return nil, badParam("min_tokens", "min_tokens must be less than or equal to max_tokens=%d, got %d.", g.maxTokens, *raw.MinTokens)
		}
		if *raw.MinTokens > 1<<31 {
			return nil, badParam("min_tokens", "min_tokens must be at most %d, got %d.", 1<<31, *raw.MinTokens)
		}
		g.minTokens = int(*raw.MinTokens)
	}
	g.ignoreEOS = raw.IgnoreEOS != nil && *raw.IgnoreEOS
	g.seed = raw.Seed
	g.remotePrefill = raw.KVTransferParams != nil && raw.KVTransferParams.DoRemotePrefill

	if chat {
		if len(raw.Prompt) > 0 && !isNull(raw.Prompt) {
			return nil, badParam("prompt", "'prompt' is not a chat completions field; send 'messages', or use /v1/completions.")
		}
		text, err := renderMessages(raw.Messages)
		if err != nil {
			return nil, err
		}
		g.promptText = text
		return g, nil
	}
	if err := parsePrompt(raw.Prompt, g); err != nil {
		return nil, err
	}
	return g, nil
}

func isNull(m json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(m), []byte("null")) }

// checkStop accepts what OpenAI accepts (a string, an array of strings, or
// null) and otherwise ignores stop sequences: emulated text never contains
// them by construction.
func checkStop(m json.RawMessage) *apiError {
	if len(m) == 0 || isNull(m) {
		return nil
	}
	var one string
	if json.Unmarshal(m, &one) == nil {
		return nil
	}
	var many []string
	if json.Unmarshal(m, &many) == nil {
		return nil
	}
	return badParam("stop", "Invalid type for 'stop': expected a string or an array of strings.")
}

// parsePrompt accepts a string, a token-ID array, or a one-element batch of
// either. Multi-prompt batches would need n streams per request.
func parsePrompt(m json.RawMessage, g *genRequest) *apiError {
	if len(m) == 0 || isNull(m) {
		return badParam("prompt", "Field required: 'prompt' (a string or an array of token IDs).")
	}
	var text string
	if json.Unmarshal(m, &text) == nil {
		g.promptText = text
		return nil
	}
	// Unmarshal appends into the capacity it is given: sized from the
	// commas, a long ID array costs its final size once, not a doubling
	// series of copies.
	var ids []int
	if inner := bytes.TrimLeft(bytes.TrimSpace(m)[1:], " \t\r\n"); len(inner) > 0 && (inner[0] == '-' || '0' <= inner[0] && inner[0] <= '9') {
		ids = make([]int, 0, bytes.Count(m, []byte{','})+1)
	}
	if err := json.Unmarshal(m, &ids); err == nil {
		g.promptIDs, g.hasPromptIDs = ids, true
		return nil
	}
	var batch []json.RawMessage
	if json.Unmarshal(m, &batch) != nil {
		return badParam("prompt", "Invalid type for 'prompt': expected a string, an array of token IDs, or a one-element array of either.")
	}
	if len(batch) != 1 {
		return badParam("prompt", "A batch of %d prompts is not supported by servebench serve: send one prompt per request.", len(batch))
	}
	if json.Unmarshal(batch[0], &text) == nil {
		g.promptText = text
		return nil
	}
	if json.Unmarshal(batch[0], &ids) == nil {
		g.promptIDs, g.hasPromptIDs = ids, true
		return nil
	}
	return badParam("prompt", "Invalid type for 'prompt': expected a string, an array of token IDs, or a one-element array of either.")
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// renderMessages turns chat messages into the prompt text that is
// tokenized. Real servers apply the model's chat template; this fixed
// "role: content" template adds a few tokens per message the same way and
// keeps shared conversation prefixes as shared token prefixes, so prefix
// caching behaves as with a real template.
func renderMessages(m json.RawMessage) (string, *apiError) {
	if len(m) == 0 || isNull(m) {
		return "", badParam("messages", "Field required: 'messages' (an array of {\"role\",\"content\"} objects).")
	}
	var msgs []chatMessage
	if err := json.Unmarshal(m, &msgs); err != nil {
		return "", badParam("messages", "Invalid type for 'messages': expected an array of {\"role\",\"content\"} objects.")
	}
	if len(msgs) == 0 {
		return "", badParam("messages", "'messages' must contain at least one message.")
	}
	var sb strings.Builder
	for i, msg := range msgs {
		if msg.Role == "" {
			return "", badParam("messages", "messages[%d]: field required: 'role'.", i)
		}
		sb.WriteString(msg.Role)
		sb.WriteString(": ")
		if err := appendContent(&sb, msg.Content, i); err != nil {
			return "", err
		}
		sb.WriteByte('\n')
	}
	sb.WriteString("assistant:")
	return sb.String(), nil
}

func appendContent(sb *strings.Builder, c json.RawMessage, i int) *apiError {
	if len(c) == 0 || isNull(c) {
		return nil
	}
	var text string
	if json.Unmarshal(c, &text) == nil {
		sb.WriteString(text)
		return nil
	}
	var parts []contentPart
	if json.Unmarshal(c, &parts) != nil {
		return badParam("messages", "messages[%d].content: expected a string or an array of content parts.", i)
	}
	for j, p := range parts {
		if p.Type != "text" {
			return badParam("messages", "messages[%d].content[%d]: content part type %q is not supported by servebench serve; only \"text\".", i, j, p.Type)
		}
		sb.WriteString(p.Text)
	}
	return nil
}
