package runspec

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/workload"
)

// Output is what a run writes. As in vLLM, nothing is written unless
// asked for: --save-result, --records or --result-dir.
type Output struct {
	SaveResult, SaveDetailed, AppendResult bool
	// Metadata holds KEY=VALUE pairs stored in the result; values of
	// credential-named keys are masked there.
	Metadata                         []string
	ResultDir, ResultFilename, Label string
	// Records is the per-request JSONL file; "none" disables it.
	Records     string
	SummaryJSON string
}

// RecordsNone as --records writes no records file.
const RecordsNone = "none"

// Register adds the output flags of a run of kind to fs; merge's
// wording is its own.
func (o *Output) Register(fs *pflag.FlagSet, kind Kind) {
	fs.BoolVar(&o.SaveResult, "save-result", false, "save the result JSON (vLLM's keys, in vLLM's order)")
	fs.BoolVar(&o.SaveDetailed, "save-detailed", false, "include per-request lists (ttfts, itls, texts, errors) in the result JSON")
	fs.BoolVar(&o.AppendResult, "append-result", false, "append the result as one JSON line to the result file")
	o.Metadata = nil
	fs.Var(&metadataValue{p: &o.Metadata}, "metadata", "KEY=VALUE pairs stored in the result JSON (repeatable; values of credential-named keys are masked)")
	fs.StringVar(&o.ResultFilename, "result-filename", "", "result file name (default: vLLM's {label|backend}-{rate}qps[-concurrency{N}]-{model}-{date}.json, with -2, -3... if taken)")
	fs.StringVar(&o.SummaryJSON, "summary-json", "", `write a load-test style summary JSON to this path ("-" for stdout)`)
	if kind == Merge {
		fs.StringVar(&o.ResultDir, "result-dir", "", "directory for the merged result JSON and merged records; giving it also writes the merged records there (default: current directory)")
		fs.StringVar(&o.Label, "label", "", "label for the merged run (result file prefix and comparisons; default: the shards')")
		fs.StringVar(&o.Records, "records", "", `merged per-request JSONL records file, every shard's records in schedule order (default: beside the result file with --save-result or --result-dir; "none" disables)`)
		return
	}
	fs.StringVar(&o.ResultDir, "result-dir", "", "directory for the result JSON and records; giving it also streams the records there (default: current directory)")
	fs.StringVar(&o.Label, "label", "", "label for the run (result file prefix and comparisons)")
	fs.StringVar(&o.Records, "records", "", `per-request JSONL records file, one line per request as it finishes (default: beside the result file with --save-result or --result-dir; "none" disables)`)
}

// WantRecords reports whether a records file is written.
func (o *Output) WantRecords() bool {
	return o.Records != RecordsNone && (o.Records != "" || o.SaveResult || o.ResultDir != "")
}

// MetadataPairs parses --metadata, masking credential-named values.
func (o *Output) MetadataPairs() ([][2]string, error) {
	var out [][2]string
	for _, item := range o.Metadata {
		k, v, ok := strings.Cut(item, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--metadata %q: expected KEY=VALUE", maskMetadata(item))
		}
		if _, secret := metadataSecret(item); secret {
			_, v, _ = strings.Cut(maskMetadata(item), "=")
		}
		out = append(out, [2]string{strings.TrimSpace(k), v})
	}
	return out, nil
}

// Check checks the output flags against each other and parses
// --metadata.
func (o *Output) Check() error {
	if o.SaveDetailed && !o.SaveResult {
		return errors.New("--save-detailed needs --save-result")
	}
	if o.AppendResult && !o.SaveResult {
		return errors.New("--append-result needs --save-result")
	}
	_, err := o.MetadataPairs()
	return err
}

// StartAtFromStdin as --start-at makes a shard read the instant from its
// standard input once it is ready to send: the barrier --local uses.
const StartAtFromStdin = "-"

// StartAtGrace is how far in the past a --start-at may be: a shard whose
// pod started a little late still runs, reporting how late; one far
// behind would send every overdue request at once.
const StartAtGrace = time.Minute

// MaxLocalShards bounds --shards with --local: every shard is a process
// with its own HTTP client pool on this machine.
const MaxLocalShards = 64

// Shard splits a run's schedule: one shard of it (--shard I/N), started
// at a shared instant, or every shard as local processes.
type Shard struct {
	Shard   string
	StartAt string
	Shards  int
	Local   bool
}

// Register adds the sharding flags of a run of kind to fs.
func (s *Shard) Register(fs *pflag.FlagSet, kind Kind) {
	if kind == Sim {
		fs.StringVar(&s.Shard, "shard", "", "record only shard `I/N` of the simulated run (the whole schedule is simulated, so merged shards equal the unsharded run exactly)")
		return
	}
	fs.StringVar(&s.Shard, "shard", "", "send only shard `I/N` of the seeded schedule (I from 0; requests k with k mod N = I); also from $"+EnvCompletionIndex+" with $"+EnvShardCount+"=N. Writes the shard's records and a manifest for servebench merge")
	fs.StringVar(&s.StartAt, "start-at", "", `wall-clock instant (RFC3339, e.g. 2026-11-23T12:00:00.000Z) the schedule starts at, shared by every shard of a run; "-" reads it from stdin once ready`)
	fs.IntVar(&s.Shards, "shards", 0, "with --local: run the benchmark as this many shard processes on this machine and merge them")
	fs.BoolVar(&s.Local, "local", false, "with --shards N: run the N shards as local processes sharing one --start-at, then merge")
}

// ShardPlan is what a shard process needs beyond an ordinary run.
type ShardPlan struct {
	Shard workload.Shard
	// StartAt is the parsed --start-at; zero when none or read from stdin.
	StartAt      time.Time
	StartAtStdin bool
	// RecordsPath is where the shard's records go when --records is not
	// given: shard-I-of-N.records.jsonl in --result-dir.
	RecordsPath string
}

// LocalShards reports whether the spec runs every shard itself.
func (s *Spec) LocalShards() bool { return s.Shard.Local || s.Changed("shards") }

// checkLocal refuses local-shard flags that cannot work.
func (s *Spec) checkLocal() error {
	n := s.Shard.Shards
	switch {
	case !s.Shard.Local:
		return fmt.Errorf("--shards %d: add --local to run the shards on this machine (elsewhere run each with --shard I/%d)", n, n)
	case n < 1 || n > MaxLocalShards:
		return fmt.Errorf("--shards %d: give 1 to %d local shard processes", n, MaxLocalShards)
	case s.Changed("shard") || s.Changed("start-at"):
		return errors.New("--local runs every shard itself: drop --shard and --start-at")
	}
	return nil
}

// ShardPlan returns the shard to run (nil: unsharded), from --shard or the
// environment, and checks the output flags can hold its records.
func (s *Spec) ShardPlan() (*ShardPlan, error) {
	spec, flag := s.Shard.Shard, "--shard"
	if spec == "" {
		index, count := s.Env.CompletionIndex, s.Env.ShardCount
		switch {
		case count != nil && index == nil:
			return nil, fmt.Errorf("$%s=%s is set but $%s is not: run in an Indexed Job or pass --shard I/%s", EnvShardCount, *count, EnvCompletionIndex, *count)
		case count != nil:
			spec, flag = *index+"/"+*count, "$"+EnvCompletionIndex+"/$"+EnvShardCount
		}
	}
	if spec == "" {
		if s.Changed("start-at") {
			return nil, errors.New("--start-at needs --shard I/N (a lone run starts when it is ready)")
		}
		return nil, nil
	}
	sh, err := workload.ParseShard(flag, spec)
	if err != nil {
		return nil, err
	}
	plan := &ShardPlan{Shard: sh}
	switch s.Shard.StartAt {
	case "":
	case StartAtFromStdin:
		plan.StartAtStdin = true
	default:
		at, err := ParseStartAt(s.Shard.StartAt, s.Env.now(), StartAtGrace)
		if err != nil {
			return nil, err
		}
		plan.StartAt = at
	}
	o := &s.Output
	if o.Records == RecordsNone {
		return nil, fmt.Errorf("%s %s: needs its records; drop --records none", flag, spec)
	}
	if o.Records == "" {
		if o.ResultDir == "" && !o.SaveResult {
			return nil, fmt.Errorf("%s %s: give --result-dir DIR (or --records FILE) for the shard's records and manifest, which servebench merge reads", flag, spec)
		}
		if o.ResultFilename == "" {
			plan.RecordsPath = filepath.Join(o.ResultDir, fmt.Sprintf("shard-%d-of-%d.records.jsonl", sh.Index, sh.Count))
		}
	}
	return plan, nil
}

// ParseStartAt reads an RFC3339 --start-at and refuses one more than
// grace before now.
func ParseStartAt(s string, now time.Time, grace time.Duration) (time.Time, error) {
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return at, fmt.Errorf("--start-at %q: not an RFC3339 instant like 2026-11-23T12:00:00Z", s)
	}
	if late := now.Sub(at); late > grace {
		return at, fmt.Errorf("--start-at %s is %s in the past: every request would be overdue and sent at once; give a future instant, e.g. %s",
			s, late.Round(time.Second), now.Add(3*time.Minute).UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	return at, nil
}
