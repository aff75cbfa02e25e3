package vllm

import "time"

// Chat preparation: the OpenAI server's event-loop time per chat request
// before it hands the request on (doc.go, "Chat preparation"), on the
// default host.
const (
	// chatPrepareBase is the chat path's preparation in the releases with
	// content-format detection cached and before 0.11 [fitted: the
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
	// chatPrepare011 is the 0.11 line's preparation [fitted: the TTFT of
	// gpustack-deepseek-r1-h200/random-128-4, vLLM 0.11.0, 1,000 chat
	// requests at once; what the release does per request to cost it is
	// not identified].
	chatPrepare011 = 16700 * us
)

// Releases where the chat path's cost changed:
//   - contentFormatDetectSince: PR #9919 ("Automatic detection of chat
//     content format from AST", merged November 2024) [approximate
//     release: 0.6.4 shipped days before it];
//   - contentFormatCachedSince: PR #20065 ("Cached resolution for
//     resolving chat templates", opened 2025-06-25) [approximate
//     release];
//   - chatPrepare011Since: the 0.11 line.
var (
	contentFormatDetectSince = Release{0, 6, 5}
	contentFormatCachedSince = Release{0, 9, 2}
	chatPrepare011Since      = Release{0, 11, 0}
)

// chatPrepare is the event-loop time the release's OpenAI server spends on
// one chat request before handing it on, on the default host.
func chatPrepare(r Release) time.Duration {
	switch {
	case !r.less(chatPrepare011Since):
		return chatPrepare011
	case !r.less(contentFormatCachedSince):
		return chatPrepareBase
	case !r.less(contentFormatDetectSince):
		return chatPrepareBase + chatContentFormatDetect
	}
	return chatPrepareBase
}
