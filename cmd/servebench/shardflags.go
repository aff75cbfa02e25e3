package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/workload"
)

// Environment variables that select a shard, for Kubernetes Indexed Jobs:
// the Job sets JOB_COMPLETION_INDEX (from 0) in every pod, and the pod
// spec sets the shard count.
const (
	envCompletionIndex = "JOB_COMPLETION_INDEX"
	envShardCount      = "SERVEBENCH_SHARDS"
)

// startAtFromStdin as --start-at makes a shard read the instant from its
// standard input once it is ready to send: the barrier --local uses.
const startAtFromStdin = "-"

// shardReadyMarker starts the stderr line a shard prints when it waits for
// its start instant on stdin.
const shardReadyMarker = "servebench: shard ready "

// shardFlags are bench's sharding flags.
type shardFlags struct {
	shard   string
	startAt string
	shards  int
	local   bool
}

func (s *shardFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.shard, "shard", "", "send only shard I/N of the seeded schedule (I from 0; requests k with k mod N = I); also from $"+envCompletionIndex+" with $"+envShardCount+"=N. Writes the shard's records and a manifest for `servebench merge`")
	fs.StringVar(&s.startAt, "start-at", "", `wall-clock instant (RFC3339, e.g. 2026-11-23T12:00:00.000Z) the schedule starts at, shared by every shard of a run; "-" reads it from stdin once ready`)
	fs.IntVar(&s.shards, "shards", 0, "with --local: run the benchmark as this many shard processes on this machine and merge them")
	fs.BoolVar(&s.local, "local", false, "with --shards N: run the N shards as local processes sharing one --start-at, then merge")
}

// shardRun is what a shard process needs beyond an ordinary bench run.
type shardRun struct {
	shard workload.Shard
	// startAt is the parsed --start-at; zero when none or read from stdin.
	startAt      time.Time
	startAtStdin bool
	// clock is the clock's sync state when the shard was about to start.
	clock bench.ClockSync
}

// resolve returns the shard to run (nil: unsharded), from --shard or the
// environment, and checks the output flags can hold its records.
func (s *shardFlags) resolve(changed func(string) bool, o *outputFlags) (*shardRun, error) {
	spec, flag := s.shard, "--shard"
	if spec == "" {
		index, hasIndex := os.LookupEnv(envCompletionIndex)
		count, hasCount := os.LookupEnv(envShardCount)
		switch {
		case hasCount && !hasIndex:
			return nil, fmt.Errorf("$%s=%s is set but $%s is not: run in an Indexed Job or pass --shard I/%s", envShardCount, count, envCompletionIndex, count)
		case hasCount:
			spec, flag = index+"/"+count, "$"+envCompletionIndex+"/$"+envShardCount
		}
	}
	if spec == "" {
		if changed("start-at") {
			return nil, errors.New("--start-at needs --shard I/N (a lone run starts when it is ready)")
		}
		return nil, nil
	}
	sh, err := workload.ParseShard(flag, spec)
	if err != nil {
		return nil, err
	}
	run := &shardRun{shard: sh}
	switch s.startAt {
	case "":
	case startAtFromStdin:
		run.startAtStdin = true
	default:
		at, err := time.Parse(time.RFC3339Nano, s.startAt)
		if err != nil {
			return nil, fmt.Errorf("--start-at %q: not an RFC3339 instant like 2026-11-23T12:00:00Z", s.startAt)
		}
		run.startAt = at
	}
	if o.recordsPath == "none" {
		return nil, fmt.Errorf("%s %s: needs its records; drop --records none", flag, spec)
	}
	if o.recordsPath == "" {
		if o.resultDir == "" && !o.saveResult {
			return nil, fmt.Errorf("%s %s: give --result-dir DIR (or --records FILE) for the shard's records and manifest, which `servebench merge` reads", flag, spec)
		}
		if o.resultFilename == "" {
			o.recordsPath = filepath.Join(o.resultDir, fmt.Sprintf("shard-%d-of-%d.records.jsonl", sh.Index, sh.Count))
		}
	}
	return run, nil
}

// selectRequests keeps the shard's requests of the full schedule and
// returns the full schedule's hash.
func (r *shardRun) selectRequests(reqs []workload.Request) ([]workload.Request, string, error) {
	hash := workload.ScheduleHash(reqs)
	part := r.shard.Select(reqs)
	if len(part) == 0 {
		return nil, "", fmt.Errorf("--shard %s: the schedule has %d requests, so this shard has none; use at most %d shards", r.shard, len(reqs), len(reqs))
	}
	return part, hash, nil
}

// waitForStart reads the start instant from in when --start-at is "-",
// after telling the parent on errw that the shard is ready.
func (r *shardRun) waitForStart(in io.Reader, errw io.Writer) (time.Time, error) {
	r.clock = bench.ReadClockSync()
	if !r.startAtStdin {
		return r.startAt, nil
	}
	fmt.Fprintf(errw, "%s%s: reading the start instant from stdin\n", shardReadyMarker, r.shard)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return time.Time{}, fmt.Errorf("--start-at -: no start instant on stdin: %w", err)
	}
	at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(line))
	if err != nil {
		return time.Time{}, fmt.Errorf("--start-at -: %q on stdin is not an RFC3339 instant", strings.TrimSpace(line))
	}
	r.startAt = at
	return at, nil
}

// shardOutcome is how a shard's run went, for its manifest.
type shardOutcome struct {
	started              time.Time
	startLate, duration  time.Duration
	interrupted, virtual bool
	notSent              int
}

func benchOutcome(res *bench.Result) shardOutcome {
	return shardOutcome{started: res.Started, startLate: res.StartLate, duration: res.Summary.Duration,
		interrupted: res.Interrupted, notSent: res.NotSent}
}

// finish writes the shard's manifest beside its records file and prints
// how the shard started.
func (r *shardRun) finish(errw io.Writer, recordsPath, hash string, total, sent int, info *report.RunInfo, opts metrics.Options, res shardOutcome) error {
	host, _ := os.Hostname()
	m := &report.ShardManifest{
		Format: report.ShardFormat, ScheduleHash: hash, Shard: r.shard.Index, Shards: r.shard.Count,
		TotalRequests: total, ShardRequests: sent, Records: filepath.Base(recordsPath), Host: host,
		Started: res.started, StartLate: res.startLate, Clock: r.clock,
		Duration: res.duration, Interrupted: res.interrupted, NotSent: res.notSent,
		Run: report.NewShardRunInfo(info), Summary: report.ShardOptions{Percentiles: opts.Percentiles, Goodput: opts.Goodput},
	}
	if !r.startAt.IsZero() {
		at := r.startAt
		m.StartAt = &at
	}
	data, err := report.MarshalShardManifest(m)
	if err != nil {
		return err
	}
	path := report.ShardManifestPath(recordsPath)
	if err := writeAtomic(path, data, false); err != nil {
		return fmt.Errorf("shard manifest: %w", err)
	}
	if !res.virtual {
		fmt.Fprintln(errw, shardStatusLine(r, res.startLate))
	}
	fmt.Fprintf(errw, "Shard manifest: %s\n", path)
	return nil
}

// finishSim writes the manifest of a simulated shard: the whole schedule
// (total requests, fingerprinted by hash) was simulated (a shard's
// requests compete with every other request for the engine, as on the
// real server) and only this shard's records kept. Simulated shards share
// the virtual clock's zero.
func (r *shardRun) finishSim(errw io.Writer, recordsPath, hash string, total int, info *report.RunInfo, opts metrics.Options, lastEnd time.Duration, interrupted bool) error {
	r.clock = bench.ClockSync{Source: report.VirtualClock, Synchronized: true}
	return r.finish(errw, recordsPath, hash, total, r.shard.Size(total), info, opts,
		shardOutcome{virtual: true, duration: lastEnd, interrupted: interrupted})
}

// shardStatusLine is the shard's one-line account of its start.
func shardStatusLine(r *shardRun, startLate time.Duration) string {
	clock := r.clock
	sync := "clock sync unknown"
	switch {
	case clock.Source == "unknown":
	case !clock.Synchronized:
		sync = "clock not synchronized (" + clock.Source + ")"
	default:
		sync = fmt.Sprintf("clock offset %s ms ±%s ms (%s)", ms2(clock.Offset), ms2(clock.MaxError), clock.Source)
	}
	late := "started when ready"
	if !r.startAt.IsZero() {
		late = "started " + ms2(startLate) + " ms after --start-at " + r.startAt.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("Shard %s: %s; %s", r.shard, late, sync)
}

func ms2(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) }
