package runspec

import (
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
	// CompletionIndex and ShardCount select a shard when --shard is not
	// given; nil when unset.
	CompletionIndex, ShardCount *string
	// Now is the clock the validator compares --start-at with (default
	// time.Now).
	Now func() time.Time
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
