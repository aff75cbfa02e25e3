package vllm

import "time"

// Chat preparation: the OpenAI server's event-loop time per chat request
// before it hands the request on (doc.go, "Chat preparation"), on the
// default host.
const (
	// chatPrepareBase is the chat path's preparation in the releases with
	// content-format detection cached, other than the 0.11 ones [fitted: the
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
	// requests at once, together with chatIngest011; what the release
	// does per request to cost it is not identified].
	chatPrepare011 = 16680 * us
	// chatIngest011 is the 0.11 line's chat latency off the event loop:
	// time a chat request spends before the engine's queue, beyond
	// Ingest, that holds no other request back [fitted: the mean TTFT of
	// gpustack-qwen3-8b-h100-latency/sharegpt-100-bs2, vLLM 0.11.0, two
	// chat streams; SGLang on the same host and client took 27 ms where
	// vLLM took 64 ms, so the time is vLLM's, not the GPU's; what it is
	// spent on is not identified].
	chatIngest011 = 22 * time.Millisecond
)

// chatCost is what the chat path costs a request on one host.
type chatCost struct{ prepare, ingest time.Duration }

// Releases where the chat path's cost changed:
//   - contentFormatDetectSince: PR #9919 ("Automatic detection of chat
//     content format from AST", merged November 2024) [approximate
//     release: 0.6.4 shipped days before it];
//   - contentFormatCachedSince: PR #20065 ("Cached resolution for
//     resolving chat templates", opened 2025-06-25) [approximate
//     release];
//   - chatPrepare011Since to chatCosts011Until: the 0.11 releases, whose
//     fitted preparation and ingest are charged there only. Published
//     0.18.0 chat runs rule both out (doc.go, "Chat preparation"), so
//     later releases take the base preparation and no extra ingest
//     [assumption for 0.12–0.17: nothing published either way].
var (
	contentFormatDetectSince = Release{0, 6, 5}
	contentFormatCachedSince = Release{0, 9, 2}
	chatPrepare011Since      = Release{0, 11, 0}
	chatCosts011Until        = Release{0, 12, 0}
)

// chatCosts is what the release's OpenAI server charges a chat request on
// the default host: its event-loop preparation, and on the 0.11 releases
// the ingest latency off the loop.
func chatCosts(r Release) chatCost {
	switch {
	case !r.less(chatCosts011Until):
		return chatCost{prepare: chatPrepareBase}
	case !r.less(chatPrepare011Since):
		return chatCost{prepare: chatPrepare011, ingest: chatIngest011}
	case !r.less(contentFormatCachedSince):
		return chatCost{prepare: chatPrepareBase}
	case !r.less(contentFormatDetectSince):
		return chatCost{prepare: chatPrepareBase + chatContentFormatDetect}
	}
	return chatCost{prepare: chatPrepareBase}
}

// onHost is c on host h (its --host-speed).
func (c chatCost) onHost(h HostOverhead) chatCost {
	return chatCost{prepare: h.scaled(c.prepare), ingest: h.scaled(c.ingest)}
}
