package runspec

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Validate is the one check every run passes before anything is written,
// started or sent: each flag as a value (ranges, choices, syntax), the
// flags against each other, the release, the shard and its start
// instant. It reads no file and touches no network, so a sweep, a tune
// study, a Kubernetes manifest or a set of local shards can check every
// run it will start before starting any. What needs the model's config,
// the GPU file, the calibration or the server is checked when the run
// resolves them (Engine.Resolve, and bench, sim and serve).
func (s *Spec) Validate() error {
	changed := s.changedFunc()
	switch s.Kind {
	case Bench:
		if err := s.Target.check(); err != nil {
			return err
		}
		if err := s.Client.check(); err != nil {
			return err
		}
		if err := s.checkRun(changed); err != nil {
			return err
		}
		if s.LocalShards() {
			return s.checkLocal()
		}
		_, err := s.ShardPlan()
		return err
	case Sim:
		if _, err := s.Engine.check(changed); err != nil {
			return err
		}
		if err := s.Simulation.check(); err != nil {
			return err
		}
		if s.Simulation.Chat() && s.Topology.Active() {
			return fmt.Errorf("--backend %s with --topology: the chat preparation of a fleet's API servers is not modelled; leave --backend out to time the fleet as for the completions API", s.Simulation.Backend)
		}
		if s.Engine.NumSchedulerSteps > 1 && s.Topology.Active() {
			return fmt.Errorf("--num-scheduler-steps %d with --topology: a fleet's engines run single steps (multi-step groups are modelled for one engine only); leave --num-scheduler-steps out", s.Engine.NumSchedulerSteps)
		}
		if err := s.checkRun(changed); err != nil {
			return err
		}
		_, err := s.ShardPlan()
		return err
	case Serve:
		if _, err := s.Engine.check(changed); err != nil {
			return err
		}
		return s.Server.check(changed)
	case Merge:
		return s.Output.Check()
	}
	return fmt.Errorf("run spec kind %q: use bench, sim or serve", s.Kind)
}

// checkRun checks what bench and sim share: the workload and the outputs.
func (s *Spec) checkRun(changed func(string) bool) error {
	if _, err := s.Workload.Resolve(changed); err != nil {
		return err
	}
	return s.Output.Check()
}

// ResolveWorkload is the checked workload of a bench or sim spec.
func (s *Spec) ResolveWorkload() (ResolvedWorkload, error) {
	return s.Workload.Resolve(s.changedFunc())
}

// Secrets lists every credential the spec holds (header values, API keys,
// URL passwords, credential-named metadata), longest first, for masking
// free text that may quote one: a server's error, a log line.
func (s *Spec) Secrets() []string {
	var out []string
	add := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) >= minSecretLen && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, h := range s.Target.Headers {
		if !h.Credential() {
			continue
		}
		add(h.Value)
		if fields := strings.Fields(h.Value); len(fields) > 1 {
			add(fields[len(fields)-1]) // a bearer token quoted without its scheme
		}
	}
	for _, u := range []string{s.Target.BaseURL} {
		for _, p := range urlSecrets(u) {
			add(p)
		}
	}
	for _, item := range s.Output.Metadata {
		if v, ok := metadataSecret(item); ok {
			add(v)
		}
	}
	add(s.Server.APIKey.Reveal())
	add(s.Env.OpenAIAPIKey.Reveal())
	add(s.Env.VLLMAPIKey.Reveal())
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// minSecretLen keeps very short values (a header "X-Key: 1") from being
// masked out of every line they happen to appear in.
const minSecretLen = 4
