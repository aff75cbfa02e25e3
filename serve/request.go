package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *apiError) {
	// Reading into a buffer of the announced size, rather than growing one,
	// keeps a large body from costing twice its size.
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength <= limit {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "RequestEntityTooLarge",
				Message: fmt.Sprintf("Request body exceeds the limit of %d bytes; send a smaller request or raise --max-request-body-bytes.", limit)}
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			return nil, &apiError{Status: http.StatusRequestTimeout, Type: "RequestTimeout",
				Message: "The request body did not arrive in time; send it at once, or raise the server's body read timeout."}
		}
		return nil, badRequest("Could not read the request body: %v", err)
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	return buf.Bytes(), nil
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
			field := typ.Field
			if field == "" {
				field = "body"
			}
			return badParam(field, "Invalid type for '%s': expected %s, got %s.", field, goTypeName(typ.Type.String()), typ.Value)
		default:
			return badRequest("JSON decode error: %v.", err)
		}
	}
	return nil
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
