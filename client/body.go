package client

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/servebench/servebench/internal/jsonenc"
	"github.com/servebench/servebench/internal/option"
	"github.com/servebench/servebench/workload"
)

// bodyTemplate holds everything about a request body that does not change
// between requests, encoded once by New.
type bodyTemplate struct {
	chat bool
	// modelField is `"model":"<name>",` or empty when no model is set.
	modelField []byte
	// tail is everything after the per-request fields: the stream flags,
	// ignore_eos and --extra-body, ending with '}'.
	tail []byte
	// maxTokensOverridden is set when --extra-body supplies the output
	// limit itself.
	maxTokensOverridden bool
}

// newBodyTemplate encodes the constant parts of the body. A --extra-body key
// that names one of the client's own keys replaces it rather than producing
// a duplicate key, which servers resolve differently.
func newBodyTemplate(cfg *Config, chat bool) (*bodyTemplate, error) {
	t := &bodyTemplate{chat: chat}
	_, overrideModel := cfg.ExtraBody["model"]
	if cfg.Model != "" && !overrideModel {
		t.modelField = append([]byte(`"model":`), jsonenc.AppendString(nil, cfg.Model)...)
		t.modelField = append(t.modelField, ',')
	}
	_, a := cfg.ExtraBody["max_tokens"]
	_, b := cfg.ExtraBody["max_completion_tokens"]
	t.maxTokensOverridden = a || b

	var tail []byte
	streaming := !cfg.NoStream
	if v, ok := cfg.ExtraBody["stream"]; !ok {
		tail = strconv.AppendBool(append(tail, `,"stream":`...), streaming)
	} else if b, isBool := v.(bool); isBool {
		streaming = b // vLLM rejects stream_options on a non-streamed request
	}
	if _, ok := cfg.ExtraBody["stream_options"]; !ok && streaming {
		tail = append(tail, `,"stream_options":{"include_usage":true`...)
		if cfg.ContinuousUsage {
			tail = append(tail, `,"continuous_usage_stats":true`...)
		}
		tail = append(tail, '}')
	}
	if _, ok := cfg.ExtraBody["ignore_eos"]; !ok && cfg.IgnoreEOS {
		tail = append(tail, `,"ignore_eos":true`...)
	}
	keys := make([]string, 0, len(cfg.ExtraBody))
	for k := range cfg.ExtraBody {
		keys = append(keys, k)
	}
	slices.Sort(keys) // a stable body makes captures and tests comparable
	for _, k := range keys {
		if (k == "prompt" && !chat) || (k == "messages" && chat) {
			return nil, option.Errorf("{extra_body} key %q would replace the workload's prompt: remove it from {extra_body}", k)
		}
		v, err := json.Marshal(cfg.ExtraBody[k])
		if err != nil {
			return nil, option.Errorf("{extra_body} key %q cannot be encoded as JSON (%w): give a JSON value", k, err)
		}
		tail = append(tail, ',')
		tail = jsonenc.AppendString(tail, k)
		tail = append(tail, ':')
		tail = append(tail, v...)
	}
	t.tail = append(tail, '}')
	return t, nil
}

var errChatNeedsText = option.New("the chat endpoint needs a text prompt but this request has only token IDs: use a tokenizer for the dataset or {endpoint} /v1/completions")

// appendBody encodes req's body onto dst.
func (t *bodyTemplate) appendBody(dst []byte, req *workload.Request) ([]byte, error) {
	dst = append(dst, '{')
	dst = append(dst, t.modelField...)
	if t.chat {
		if req.Prompt == "" && len(req.PromptIDs) > 0 {
			return dst, errChatNeedsText
		}
		dst = append(dst, `"messages":[{"role":"user","content":`...)
		dst = jsonenc.AppendString(dst, req.Prompt)
		dst = append(dst, "}]"...)
		if !t.maxTokensOverridden {
			// Both names: vLLM reads max_completion_tokens, llama.cpp and
			// TGI read only max_tokens.
			dst = strconv.AppendInt(append(dst, `,"max_completion_tokens":`...), int64(req.MaxTokens), 10)
			dst = strconv.AppendInt(append(dst, `,"max_tokens":`...), int64(req.MaxTokens), 10)
		}
	} else {
		dst = append(dst, `"prompt":`...)
		if req.Prompt == "" && len(req.PromptIDs) > 0 {
			dst = append(dst, '[')
			for i, id := range req.PromptIDs {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = strconv.AppendInt(dst, int64(id), 10)
			}
			dst = append(dst, ']')
		} else {
			dst = jsonenc.AppendString(dst, req.Prompt)
		}
		if !t.maxTokensOverridden {
			dst = strconv.AppendInt(append(dst, `,"max_tokens":`...), int64(req.MaxTokens), 10)
		}
	}
	return append(dst, t.tail...), nil
}
