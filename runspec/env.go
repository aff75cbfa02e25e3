package runspec

import (
	"io"
	"strings"
	"time"

	"github.com/servebench/servebench/perf"
)

// Environment variables a run reads. The shard variables serve
// Kubernetes Indexed Jobs: the Job sets JOB_COMPLETION_INDEX (from 0) in
// every pod, and the pod spec sets the shard count.
const (
	EnvCompletionIndex      = "JOB_COMPLETION_INDEX"
	EnvShardCount           = "SERVEBENCH_SHARDS"
	EnvOpenAIAPIKey         = "OPENAI_API_KEY"
	EnvVLLMAPIKey           = "VLLM_API_KEY"
	EnvAllowLongMaxModelLen = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
)

// Env is what a run takes from its environment rather than its flags: it
// is not written back as arguments or YAML, since another machine (a
// shard's pod, a tune worker) has its own.
type Env struct {
	// HF is where the Hugging Face cache lives.
	HF perf.HFEnv
	// AllowLongMaxModelLen is VLLM_ALLOW_LONG_MAX_MODEL_LEN as set.
	AllowLongMaxModelLen string
	// OpenAIAPIKey is sent as "Authorization: Bearer KEY", as vLLM's
	// client does, unless a --header sets Authorization.
	OpenAIAPIKey Secret
	// VLLMAPIKey is serve's key when --api-key is not given, as vLLM
	// reads it.
	VLLMAPIKey Secret
	// CompletionIndex and ShardCount select a shard when --shard is not
	// given; nil when unset.
	CompletionIndex, ShardCount *string
	// Now is the clock the validator compares --start-at with (default
	// time.Now).
	Now func() time.Time
	// DefaultTarget is where bench looks for a server when no --base-url,
	// --host or --port is given (default vLLM's, 127.0.0.1:8000).
	DefaultTarget string
}

// DefaultTargetAddr is vLLM's default server address.
const DefaultTargetAddr = "127.0.0.1:8000"

// Target is where bench looks for a server when none is given.
func (env Env) Target() string {
	if env.DefaultTarget == "" {
		return DefaultTargetAddr
	}
	return env.DefaultTarget
}

// ReadEnv reads the environment through lookup (os.LookupEnv) and home
// (the user's home directory).
func ReadEnv(lookup func(string) (string, bool), home string) Env {
	get := func(k string) string { v, _ := lookup(k); return v }
	hub := get("HF_HUB_CACHE")
	if hub == "" {
		hub = get("HUGGINGFACE_HUB_CACHE")
	}
	env := Env{
		HF:                   perf.HFEnv{HubCache: hub, Home: get("HF_HOME"), XDGCacheHome: get("XDG_CACHE_HOME"), UserHome: home},
		AllowLongMaxModelLen: get(EnvAllowLongMaxModelLen),
		OpenAIAPIKey:         NewSecret(get(EnvOpenAIAPIKey)),
		VLLMAPIKey:           NewSecret(get(EnvVLLMAPIKey)),
	}
	if v, ok := lookup(EnvCompletionIndex); ok {
		env.CompletionIndex = &v
	}
	if v, ok := lookup(EnvShardCount); ok {
		env.ShardCount = &v
	}
	return env
}

func (env Env) now() time.Time {
	if env.Now != nil {
		return env.Now()
	}
	return time.Now()
}

// IO is where a run writes and what stops it, beside its spec.
type IO struct {
	// Out takes the result block; Err progress lines, warnings and the
	// paths written. nil discards.
	Out, Err io.Writer
	// In is read by a shard whose --start-at is "-".
	In io.Reader
	// Abort, closed after the run's context is canceled (a second
	// Ctrl-C), cuts requests in flight off at once instead of after
	// --interrupt-grace.
	Abort <-chan struct{}
	// Progress, when set, hears of every measured request and of the
	// run's end, before the result is printed.
	Progress Progress
	// Setup, when set, hears of every prompt made before the run, where
	// each costs round trips to a server's tokenizer.
	Setup Progress
}

// Progress follows a run: a progress bar, a log line every N requests.
type Progress interface {
	Update(done, total int)
	Finish()
}

// Streams is io with nil writers and reader replaced by empty ones.
func (o IO) Streams() (out, errw io.Writer, in io.Reader) {
	out, errw, in = o.Out, o.Err, o.In
	if out == nil {
		out = io.Discard
	}
	if errw == nil {
		errw = io.Discard
	}
	if in == nil {
		in = strings.NewReader("")
	}
	return out, errw, in
}
