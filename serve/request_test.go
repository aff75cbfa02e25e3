package serve

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// apiErrorBody is the nested error schema.
type apiErrorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	} `json:"error"`
}

func postHandler(t *testing.T, h http.Handler, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func decodeError(t *testing.T, rec *httptest.ResponseRecorder) apiErrorBody {
	t.Helper()
	var e apiErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body %q is not JSON: %v", rec.Body.String(), err)
	}
	return e
}

// TestRequestValidation covers every rejection that happens before a
// request reaches the engine: the status, vLLM's error type and message.
func TestRequestValidation(t *testing.T) {
	cfg := testConfig(t)
	cfg.Engine.MaxModelLen = 64
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	long := strings.Repeat(" hello", 60)
	tests := []struct {
		name, path, body string
		status           int
		typ              string
		message          string // exact, or a prefix when it ends with "…"
	}{
		{"malformed JSON", "/v1/completions", `{"prompt": "hi",`, 400, "BadRequestError", "JSON decode error at byte 16: unexpected end of JSON input."},
		{"not an object", "/v1/completions", `[1,2]`, 400, "BadRequestError", "JSON decode error: the request body must be a JSON object, got an array."},
		{"empty body", "/v1/completions", ``, 400, "BadRequestError", "JSON decode error: the request body is empty; send a JSON object."},
		{"max_tokens string", "/v1/completions", `{"prompt":"hi","max_tokens":"ten"}`, 400, "BadRequestError", "max_tokens: Input should be a valid integer, unable to parse string as an integer."},
		{"stream not bool", "/v1/completions", `{"prompt":"hi","stream":"yes"}`, 400, "BadRequestError", "stream: Input should be a valid boolean, unable to interpret input."},
		{"stream_options type", "/v1/completions", `{"prompt":"hi","stream":true,"stream_options":{"include_usage":1}}`, 400, "BadRequestError", "Invalid type for 'stream_options.include_usage': expected a boolean, got number."},
		{"stream_options without stream", "/v1/completions", `{"prompt":"hi","stream_options":{"include_usage":true}}`, 400, "BadRequestError", "Stream options can only be defined when `stream=True`."},
		{"max_tokens zero", "/v1/completions", `{"prompt":"hi","max_tokens":0}`, 400, "BadRequestError", "max_tokens must be at least 1, got 0."},
		{"min_tokens negative", "/v1/completions", `{"prompt":"hi","min_tokens":-1}`, 400, "BadRequestError", "min_tokens must be greater than or equal to 0, got -1."},
		{"min over max", "/v1/completions", `{"prompt":"hi","max_tokens":4,"min_tokens":5}`, 400, "BadRequestError", "min_tokens must be less than or equal to max_tokens=4, got 5."},
		{"n>1", "/v1/completions", `{"prompt":"hi","n":2}`, 400, "BadRequestError", "n=2 is not supported: servebench serve generates one sequence per request (n=1)."},
		{"n=0", "/v1/completions", `{"prompt":"hi","n":0}`, 400, "BadRequestError", "n must be at least 1, got 0."},
		{"best_of", "/v1/completions", `{"prompt":"hi","best_of":3}`, 400, "BadRequestError", "best_of=3 is not supported: servebench serve generates one sequence per request."},
		{"stop wrong type", "/v1/completions", `{"prompt":"hi","stop":5}`, 400, "BadRequestError", "Invalid type for 'stop': expected a string or an array of strings."},
		{"missing prompt", "/v1/completions", `{"max_tokens":3}`, 400, "BadRequestError", "Field required: 'prompt' (a string or an array of token IDs)."},
		{"prompt wrong type", "/v1/completions", `{"prompt":{"a":1}}`, 400, "BadRequestError", "Invalid type for 'prompt': expected a string, an array of token IDs, or a one-element array of either."},
		{"prompt batch", "/v1/completions", `{"prompt":["a","b"]}`, 400, "BadRequestError", "A batch of 2 prompts is not supported by servebench serve: send one prompt per request."},
		{"empty prompt", "/v1/completions", `{"prompt":""}`, 400, "BadRequestError", "The prompt is empty: send at least one token."},
		{"token out of vocabulary", "/v1/completions", `{"prompt":[1,2,999999999]}`, 400, "BadRequestError", "Token id 999999999 is out of vocabulary"},
		{"negative token", "/v1/completions", `{"prompt":[[-1]]}`, 400, "BadRequestError", "Token id -1 is out of vocabulary"},
		{"context length", "/v1/completions", `{"prompt":[1,2,3,4,5,6,7,8,9,10],"max_tokens":60}`, 400, "BadRequestError",
			"This model's maximum context length is 64 tokens. However, you requested 70 tokens (10 in the messages, 60 in the completion). Please reduce the length of the messages or completion."},
		{"context length no max_tokens", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + long + `"}]}`, 400, "BadRequestError",
			"This model's maximum context length is 64 tokens. However, you requested 66 tokens in the messages, Please reduce the length of the messages."},
		{"temperature not a number", "/v1/completions", `{"prompt":"hi","temperature":"hot"}`, 400, "BadRequestError", "temperature: Input should be a valid number, unable to parse string as a number."},
		{"temperature negative", "/v1/completions", `{"prompt":"hi","temperature":-1}`, 400, "BadRequestError", "temperature must be non-negative, got -1.0."},
		{"top_p above 1", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"top_p":5}`, 400, "BadRequestError", "top_p must be in (0, 1], got 5.0."},
		{"top_p zero", "/v1/completions", `{"prompt":"hi","top_p":0}`, 400, "BadRequestError", "top_p must be in (0, 1], got 0.0."},
		{"top_k", "/v1/completions", `{"prompt":"hi","top_k":-2}`, 400, "BadRequestError", "top_k must be 0 (disable), or at least 1, got -2."},
		{"min_p", "/v1/completions", `{"prompt":"hi","min_p":1.5}`, 400, "BadRequestError", "min_p must be in [0, 1], got 1.5."},
		{"presence_penalty", "/v1/completions", `{"prompt":"hi","presence_penalty":2.5}`, 400, "BadRequestError", "presence_penalty must be in [-2, 2], got 2.5."},
		{"frequency_penalty", "/v1/completions", `{"prompt":"hi","frequency_penalty":-3}`, 400, "BadRequestError", "frequency_penalty must be in [-2, 2], got -3.0."},
		{"repetition_penalty", "/v1/completions", `{"prompt":"hi","repetition_penalty":0}`, 400, "BadRequestError", "repetition_penalty must be greater than zero, got 0.0."},
		{"logprobs on completions", "/v1/completions", `{"prompt":"hi","logprobs":1}`, 400, "BadRequestError", "servebench serve does not emulate log probabilities (its /v1/models says allow_logprobs: false); leave out logprobs."},
		{"logprobs negative", "/v1/completions", `{"prompt":"hi","logprobs":-3}`, 400, "BadRequestError", "logprobs must be non-negative or -1, got -3."},
		{"logprobs on chat", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":2}`, 400, "BadRequestError", "servebench serve does not emulate log probabilities (its /v1/models says allow_logprobs: false); leave out logprobs."},
		{"top_logprobs without logprobs", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"top_logprobs":2}`, 400, "BadRequestError", "when using `top_logprobs`, `logprobs` must be set to true."},
		{"prompt_logprobs", "/v1/completions", `{"prompt":"hi","prompt_logprobs":0}`, 400, "BadRequestError", "servebench serve does not emulate log probabilities (its /v1/models says allow_logprobs: false); leave out prompt_logprobs."},
		{"unknown model", "/v1/completions", `{"model":"nope","prompt":"hi"}`, 404, "NotFoundError", "The model `nope` does not exist."},
		{"chat missing messages", "/v1/chat/completions", `{"max_tokens":3}`, 400, "BadRequestError", "Field required: 'messages' (an array of {\"role\",\"content\"} objects)."},
		{"chat empty messages", "/v1/chat/completions", `{"messages":[]}`, 400, "BadRequestError", "'messages' must contain at least one message."},
		{"chat no role", "/v1/chat/completions", `{"messages":[{"content":"x"}]}`, 400, "BadRequestError", "messages[0]: field required: 'role'."},
		{"chat image part", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400, "BadRequestError",
			"messages[0].content[0]: content part type \"image_url\" is not supported by servebench serve; only \"text\"."},
		{"chat with prompt", "/v1/chat/completions", `{"prompt":"x","messages":[{"role":"user","content":"x"}]}`, 400, "BadRequestError",
			"'prompt' is not a chat completions field; send 'messages', or use /v1/completions."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := postHandler(t, h, tc.path, tc.body)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			e := decodeError(t, rec)
			if e.Error.Type != tc.typ || e.Error.Code != tc.status {
				t.Errorf("type %q code %d, want %q %d", e.Error.Type, e.Error.Code, tc.typ, tc.status)
			}
			if e.Error.Message != tc.message {
				t.Errorf("message\n got %q\nwant %q", e.Error.Message, tc.message)
			}
		})
	}
}

// TestBodyLimit: a body over MaxBodyBytes is a 413 in the error schema.
func TestBodyLimit(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxBodyBytes = 1 << 10
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"prompt":"` + strings.Repeat("a", 2<<10) + `"}`
	rec := postHandler(t, s.Handler(), "/v1/completions", body)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", rec.Code)
	}
	e := decodeError(t, rec)
	want := "Request body exceeds the limit of 1024 bytes; send a smaller request or raise --max-request-body-bytes."
	if e.Error.Message != want || e.Error.Code != 413 {
		t.Errorf("got %+v, want message %q code 413", e.Error, want)
	}
}

// FuzzParseRequest feeds arbitrary bodies through decoding and validation:
// every input is accepted or rejected with a 4xx, never a panic.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"prompt":"hi","max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":[1,2,3]}`, `{"prompt":[[1,2]]}`, `{"prompt":["x"]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"max_completion_tokens":5}`,
		`{"stop":["a"],"n":1,"seed":4,"min_tokens":2,"ignore_eos":true}`,
		`{`, `[]`, `null`, `{"prompt":null}`, `{"max_tokens":1e400}`, "\x00",
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		var raw rawRequest
		if e := decodeJSON(body, &raw); e != nil {
			if e.Status != 400 || e.Message == "" {
				t.Fatalf("decode error %+v", e)
			}
			return
		}
		g, e := parseGenRequest(&raw, chat)
		if e != nil {
			if e.Status != 400 || e.Message == "" || strings.Contains(e.Message, "\n") {
				t.Fatalf("validation error %+v", e)
			}
			return
		}
		if g.maxTokens < 0 || g.minTokens < 0 || (g.maxTokens > 0 && g.minTokens > g.maxTokens) {
			t.Fatalf("accepted inconsistent limits: max %d min %d", g.maxTokens, g.minTokens)
		}
		if !chat && !g.hasPromptIDs && g.promptText == "" && len(raw.Prompt) == 0 {
			t.Fatalf("accepted a completion request without a prompt")
		}
	})
}
