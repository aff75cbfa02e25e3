package serve

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/servebench/servebench/internal/jsonenc"
)

// ErrorStyle selects the JSON shape of error bodies. vLLM changed it: up to
// about 0.9 the body was the error object itself
// ({"object":"error","message":...,"type":...,"param":null,"code":400});
// current vLLM (and llm-d-inference-sim, see the captured unknown-model
// body) wraps it as {"error":{"message":...,"type":...,"param":...,"code":...}},
// which is also the only shape the official OpenAI SDKs read the message from.
type ErrorStyle string

const (
	// ErrorStyleNested is {"error":{...}}: current vLLM and the OpenAI API.
	ErrorStyleNested ErrorStyle = "nested"
	// ErrorStyleLegacy is vLLM 0.5–0.8's flat {"object":"error",...}.
	ErrorStyleLegacy ErrorStyle = "legacy"
)

// ParseErrorStyle maps a flag value to an ErrorStyle ("" means nested).
func ParseErrorStyle(s string) (ErrorStyle, error) {
	switch ErrorStyle(s) {
	case "", ErrorStyleNested:
		return ErrorStyleNested, nil
	case ErrorStyleLegacy:
		return ErrorStyleLegacy, nil
	}
	return "", fmt.Errorf("error style %q: use %q (current vLLM, {\"error\":{...}}) or %q (vLLM ≤0.8, {\"object\":\"error\",...})", s, ErrorStyleNested, ErrorStyleLegacy)
}

// apiError is an error answered in OpenAI's error schema with vLLM's type
// names (BadRequestError, NotFoundError, ...).
type apiError struct {
	Status  int
	Type    string
	Message string
	Param   string // "" → null
}

func (e *apiError) Error() string { return e.Message }

func badRequest(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "BadRequestError", Message: fmt.Sprintf(format, args...)}
}

func badParam(param, format string, args ...any) *apiError {
	e := badRequest(format, args...)
	e.Param = param
	return e
}

func notFound(msg string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: "NotFoundError", Message: msg}
}

// appendErrorObject appends the inner error object. The legacy style carries
// "object":"error" inside it, as vLLM ≤0.8 did even when nesting it in a
// streamed error event.
func appendErrorObject(b []byte, e *apiError, style ErrorStyle) []byte {
	b = append(b, '{')
	if style == ErrorStyleLegacy {
		b = append(b, `"object":"error",`...)
	}
	b = append(b, `"message":`...)
	b = jsonenc.AppendString(b, e.Message)
	b = append(b, `,"type":`...)
	b = jsonenc.AppendString(b, e.Type)
	b = append(b, `,"param":`...)
	if e.Param == "" {
		b = append(b, "null"...)
	} else {
		b = jsonenc.AppendString(b, e.Param)
	}
	b = append(b, `,"code":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	return append(b, '}')
}

// errorBody is the complete response body for an error answered before any
// byte of a stream was written.
func errorBody(e *apiError, style ErrorStyle) []byte {
	b := make([]byte, 0, 128+len(e.Message))
	if style == ErrorStyleLegacy {
		return appendErrorObject(b, e, style)
	}
	b = append(b, `{"error":`...)
	b = appendErrorObject(b, e, style)
	return append(b, '}')
}

// streamErrorEvent is the SSE event vLLM sends when a request fails after
// the stream started: always wrapped in {"error":...}.
func streamErrorEvent(e *apiError, style ErrorStyle) []byte {
	b := make([]byte, 0, 160+len(e.Message))
	b = append(b, `data: {"error":`...)
	b = appendErrorObject(b, e, style)
	return append(b, "}\n\n"...)
}

func writeAPIError(w http.ResponseWriter, e *apiError, style ErrorStyle) {
	body := errorBody(e, style)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}
