package vllm

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Chat preparation: the OpenAI server's event-loop time per chat request
// before it hands the request on (doc.go, "Chat preparation"), on the
// default host.
const (
	// chatPrepareBase is the chat path's preparation in the releases with
	// content-format detection cached (0.11.0 adds its template parse) [fitted: the
	// TTFT of gpustack-quantization-impact/h100-bf16-kv-fp8, vLLM 0.9.2,
	// 1,000 ShareGPT chat requests at once]; earlier releases are assumed
	// to pay it too.
	chatPrepareBase = 2900 * us
	// chatContentFormatDetect is what detecting the template's content
	// format from its Jinja AST cost on every chat request until it was
	// cached: PR #20065 measured "6-8 seconds delay before prompts
	// actually are started to process" for 1,000 chat requests sent at
	// once (meta-llama's template), 7 ms a request.
	chatContentFormatDetect = 7 * time.Millisecond
	// chatTemplateParseFitted is what vLLM 0.11.0's per-request parse of
	// the chat template (templateParseFor) costs for the reference
	// template, DeepSeek-R1-0528's, on the default host [fitted: 16.68 ms
	// of preparation put the mean TTFT of gpustack-deepseek-r1-h200/
	// random-128-4 (vLLM 0.11.0, 1,000 chat requests of 128 tokens at
	// once) on the published one, together with chatIngest011; this is
	// that less chatPrepareBase]. Other templates take their measured
	// share of it.
	chatTemplateParseFitted = 16680*us - chatPrepareBase
	// chatIngest011 is the 0.11 line's chat latency off the event loop:
	// time a chat request spends before the engine's queue, beyond
	// Ingest, that holds no other request back [fitted: the mean TTFT of
	// gpustack-qwen3-8b-h100-latency/sharegpt-100-bs2, vLLM 0.11.0, two
	// chat streams; SGLang on the same host and client took 27 ms where
	// vLLM took 64 ms, so the time is vLLM's, not the GPU's; what it is
	// spent on is not identified].
	chatIngest011 = 22 * time.Millisecond
)

// chatCost is what the chat path costs a request on one host: prepare
// holds templateParse, 0.11.0's parse of template (a measured template's
// name, "" when the model's was not measured and the reference's cost
// stands in).
type chatCost struct {
	prepare, ingest, templateParse time.Duration
	template                       string
}

// Releases where the chat path's cost changed:
//   - contentFormatDetectSince: PR #9919 ("Automatic detection of chat
//     content format from AST", merged 2024-11-16 as commit 32e46e0, a
//     day after 0.6.4) [approximate release: 0.6.4.post1 may not carry
//     it];
//   - contentFormatCachedSince: PR #20065 ("Cached resolution for
//     resolving chat templates", merged 2025-06-27 as commit aa0dc77,
//     before 0.9.2 of 2025-07-08);
//   - templateParseSince to chatCosts011Until: the 0.11 releases, whose
//     fitted ingest is charged there only. Published 0.18.0 chat runs
//     rule it out (doc.go, "Chat preparation"), so later releases take
//     no extra ingest [assumption: nothing published covers 0.12–0.17;
//     0.11.1 and 0.11.2 keep 0.11.0's, as nothing identifies its cause].
//   - templateParseSince to templateParseCachedSince: the chat-template
//     kwargs filter (PR #25794, the fix for advisory GHSA-6fvq-23cw-5628,
//     fixed in 0.11.0) parsed the template on every chat request until
//     PR #26227 ("[Frontend] Cache chat template kwargs resolution",
//     merged 2025-10-04, after the 0.11.0 tag) cached the parse by
//     template: 0.11.0 alone pays it.
var (
	contentFormatDetectSince = Release{0, 6, 5}
	contentFormatCachedSince = Release{0, 9, 2}
	templateParseSince       = Release{0, 11, 0}
	templateParseCachedSince = Release{0, 11, 1}
	chatCosts011Until        = Release{0, 12, 0}
)

// chatCosts is what the release's OpenAI server charges a chat request
// for the model the user named (modelID: its chat template) on the
// default host: its event-loop preparation, and on the 0.11 releases the
// ingest latency off the loop.
func chatCosts(r Release, modelID string) chatCost {
	switch {
	case !r.less(chatCosts011Until):
		return chatCost{prepare: chatPrepareBase}
	case !r.less(templateParseCachedSince):
		return chatCost{prepare: chatPrepareBase, ingest: chatIngest011}
	case !r.less(templateParseSince):
		parse, template := templateParseFor(modelID)
		return chatCost{prepare: chatPrepareBase + parse, ingest: chatIngest011, templateParse: parse, template: template}
	case !r.less(contentFormatCachedSince):
		return chatCost{prepare: chatPrepareBase}
	case !r.less(contentFormatDetectSince):
		return chatCost{prepare: chatPrepareBase + chatContentFormatDetect}
	}
	return chatCost{prepare: chatPrepareBase}
}

// onHost is c on host h (its --host-speed).
func (c chatCost) onHost(h HostOverhead) chatCost {
	return chatCost{prepare: h.scaled(c.prepare), ingest: h.scaled(c.ingest),
		templateParse: h.scaled(c.templateParse), template: c.template}
}

// templateParse is one chat template's cost in vLLM 0.11.0's per-request
// kwargs resolution (tools/vllm-chattemplate): building a sandboxed Jinja
// environment, parsing the template and walking it for the variables it
// reads, timed on templateParseCPU.
type templateParse struct {
	Name        string
	Chars       int
	LexerTokens int
	SHA256      string
	// Parse is the fastest of Calls timed calls.
	Parse time.Duration
	Calls int
	// Models are the Hugging Face ids whose checkpoints carry the
	// template.
	Models []string
}

// templateParseReference is the template chatTemplateParseFitted was
// fitted on.
const templateParseReference = "deepseek-r1-0528"

// templateParseFor is what vLLM 0.11.0's per-request template parse costs
// a chat request for model id on the default host, and the measured
// template it charges: the fitted reference cost scaled by the template's
// measured time over the reference's (the measuring CPU cancels), or, for
// a model whose template was not measured, the reference cost and no
// template [assumption].
func templateParseFor(id string) (time.Duration, string) {
	// TestMeasuredTemplateTable keeps the reference in the generated table.
	reference, haveReference := measuredTemplate(func(t templateParse) bool { return t.Name == templateParseReference })
	key := templateModelKey(id)
	t, ok := measuredTemplate(func(t templateParse) bool {
		for _, m := range t.Models {
			if templateModelKey(m) == key {
				return true
			}
		}
		return false
	})
	if key == "" || !ok || !haveReference || reference.Parse <= 0 {
		return chatTemplateParseFitted, ""
	}
	return time.Duration(float64(chatTemplateParseFitted) * float64(t.Parse) / float64(reference.Parse)), t.Name
}

// ChatTemplateLines is servebench's startup line (vLLM logs none) for a
// release that parses the chat template on every chat request (0.11.0):
// which template it times and what a request pays for it on this host;
// none for other releases, offline, or without host overhead.
func ChatTemplateLines(r *Resolved) []LogLine {
	if r.ChatTemplateParse <= 0 {
		return nil
	}
	what := "the " + r.ChatTemplate + " chat template (measured)"
	if r.ChatTemplate == "" {
		what = "a chat template not measured here (" + templateParseReference + "'s cost assumed)"
	}
	return []LogLine{{Text: fmt.Sprintf("vLLM %s parses the chat template on every chat request: %s, %.2f ms of the server's event loop a request on this host (servebench)",
		r.Profile.Release, what, r.ChatTemplateParse.Seconds()*1e3)}}
}

func measuredTemplate(match func(templateParse) bool) (templateParse, bool) {
	for _, t := range measuredTemplateParse {
		if match(t) {
			return t, true
		}
	}
	return templateParse{}, false
}

// templateModelKey reduces the ways a user names a model to its repository
// name, lower case: a Hugging Face id ("Qwen/Qwen3-14B"), a directory or
// its config.json named after the repository ("Qwen--Qwen3-14B",
// "models--Qwen--Qwen3-14B/snapshots/<revision>", as the hub cache lays
// them out). A name it cannot reduce is kept whole.
func templateModelKey(id string) string {
	p := strings.TrimRight(filepath.ToSlash(strings.TrimSpace(id)), "/")
	p = strings.TrimSuffix(p, "/config.json")
	parts := strings.Split(p, "/")
	if n := len(parts); n >= 3 && parts[n-2] == "snapshots" {
		parts = parts[:n-2]
	}
	name := parts[len(parts)-1]
	if i := strings.LastIndex(name, "--"); i >= 0 {
		name = name[i+2:]
	}
	return strings.ToLower(name)
}
