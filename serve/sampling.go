package serve

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// check applies vLLM's SamplingParams range checks, in vLLM's order and
// with its messages (the wording of vLLM 0.9 and later: top_k 0 or -1
// disables, repetition_penalty only needs to be positive). Log
// probabilities are refused rather than invented: /v1/models advertises
// allow_logprobs false, so a client that checks knows beforehand.
func (p *sampling) check(chat bool) *apiError {
	if v := p.PresencePenalty; v != nil && !(-2 <= *v && *v <= 2) {
		return badParam("presence_penalty", "presence_penalty must be in [-2, 2], got %s.", pyFloat(*v))
	}
	if v := p.FrequencyPenalty; v != nil && !(-2 <= *v && *v <= 2) {
		return badParam("frequency_penalty", "frequency_penalty must be in [-2, 2], got %s.", pyFloat(*v))
	}
	if v := p.RepetitionPenalty; v != nil && *v <= 0 {
		return badParam("repetition_penalty", "repetition_penalty must be greater than zero, got %s.", pyFloat(*v))
	}
	if v := p.Temperature; v != nil && *v < 0 {
		return badParam("temperature", "temperature must be non-negative, got %s.", pyFloat(*v))
	}
	if v := p.TopP; v != nil && !(0 < *v && *v <= 1) {
		return badParam("top_p", "top_p must be in (0, 1], got %s.", pyFloat(*v))
	}
	if v := p.TopK; v != nil && *v < -1 {
		return badParam("top_k", "top_k must be 0 (disable), or at least 1, got %d.", *v)
	}
	if v := p.MinP; v != nil && !(0 <= *v && *v <= 1) {
		return badParam("min_p", "min_p must be in [0, 1], got %s.", pyFloat(*v))
	}
	return p.checkLogprobs(chat)
}

func (p *sampling) checkLogprobs(chat bool) *apiError {
	const refusal = "servebench serve does not emulate log probabilities (its /v1/models says allow_logprobs: false); leave out %s."
	if p.PromptLogprobs != nil {
		return badParam("prompt_logprobs", refusal, "prompt_logprobs")
	}
	raw := bytes.TrimSpace(p.Logprobs)
	if len(raw) == 0 || isNull(raw) {
		if chat && p.TopLogprobs != nil && *p.TopLogprobs > 0 {
			return badParam("top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true.")
		}
		return nil
	}
	if chat {
		var on bool
		if json.Unmarshal(raw, &on) != nil {
			return badParam("logprobs", "Invalid type for 'logprobs': expected a boolean, got %s.", jsonKind(raw[0]))
		}
		if !on {
			if p.TopLogprobs != nil && *p.TopLogprobs > 0 {
				return badParam("top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true.")
			}
			return nil
		}
		return badParam("logprobs", refusal, "logprobs")
	}
	var n int64
	if json.Unmarshal(raw, &n) != nil {
		return badParam("logprobs", "Invalid type for 'logprobs': expected an integer, got %s.", jsonKind(raw[0]))
	}
	if n < 0 && n != -1 {
		return badParam("logprobs", "logprobs must be non-negative or -1, got %d.", n)
	}
	return badParam("logprobs", refusal, "logprobs")
}

// pyFloat formats a float as Python's repr does (vLLM's messages interpolate
// Python floats): "5.0", "-1.0", "0.0001", "1e-05", "1e+16".
func pyFloat(f float64) string {
	sci := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expText, _ := strings.Cut(sci, "e")
	exp, _ := strconv.Atoi(expText)
	if exp < -4 || exp >= 16 {
		return mant + "e" + expText[:1] + pad2(strings.TrimLeft(expText[1:], "0"))
	}
	fixed := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(fixed, ".") {
		fixed += ".0"
	}
	return fixed
}

func pad2(digits string) string {
	for len(digits) < 2 {
		digits = "0" + digits
	}
	return digits
}
