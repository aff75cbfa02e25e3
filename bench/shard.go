package bench

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/workload"
)

// ShardReadyMarker starts the stderr line a shard prints when it waits
// for its start instant on stdin (--start-at -): the barrier of
// RunLocalShards.
const ShardReadyMarker = "servebench: shard ready "

// selectShard keeps the shard's requests of the full schedule and
// returns the full schedule's hash.
func selectShard(p *runspec.ShardPlan, reqs []workload.Request) ([]workload.Request, string, error) {
	hash := workload.ScheduleHash(reqs)
	part := p.Shard.Select(reqs)
	if len(part) == 0 {
		return nil, "", fmt.Errorf("--shard %s: the schedule has %d requests, so this shard has none; use at most %d shards", p.Shard, len(reqs), len(reqs))
	}
	return part, hash, nil
}

// waitForStart reads the start instant from in when --start-at is "-",
// after telling the parent on errw that the shard is ready.
func waitForStart(p *runspec.ShardPlan, in io.Reader, errw io.Writer) (time.Time, error) {
	if !p.StartAtStdin {
		return p.StartAt, nil
	}
	fmt.Fprintf(errw, "%s%s: reading the start instant from stdin\n", ShardReadyMarker, p.Shard)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return time.Time{}, fmt.Errorf("--start-at -: no start instant on stdin: %w", err)
	}
	at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(line))
	if err != nil {
		return time.Time{}, fmt.Errorf("--start-at -: %q on stdin is not an RFC3339 instant", strings.TrimSpace(line))
	}
	p.StartAt = at
	return at, nil
}

// ShardManifest is the manifest of a shard of a run: the whole schedule
// (total requests, fingerprinted by hash), this shard's sent requests,
// and how the shard ran. sim writes its shards' manifests with it too.
func ShardManifest(p *runspec.ShardPlan, recordsPath, hash string, total, sent int, info *report.RunInfo, w runspec.ResolvedWorkload, clock ClockSync) *report.ShardManifest {
	m := &report.ShardManifest{
		Format: report.ShardFormat, ScheduleHash: hash, Shard: p.Shard.Index, Shards: p.Shard.Count,
		TotalRequests: total, ShardRequests: sent, Records: filepath.Base(recordsPath), Host: hostname(),
		Clock: clock, Run: report.NewShardRunInfo(info),
		Summary: report.ShardOptions{Percentiles: w.Summary.Percentiles, Goodput: w.Summary.Goodput},
	}
	if !p.StartAt.IsZero() {
		at := p.StartAt
		m.StartAt = &at
	}
	return m
}

// WriteShardManifest writes m beside the shard's records and says where
// on errw.
func WriteShardManifest(errw io.Writer, recordsPath string, m *report.ShardManifest) error {
	path, err := report.WriteShardManifest(recordsPath, m)
	if err != nil {
		return err
	}
	fmt.Fprintf(errw, "Shard manifest: %s\n", path)
	return nil
}

// shardStatusLine is the shard's one-line account of its start.
func shardStatusLine(p *runspec.ShardPlan, clock ClockSync, startLate time.Duration) string {
	sync := "clock sync unknown"
	switch {
	case clock.Source == "unknown":
	case !clock.Synchronized:
		sync = "clock not synchronized (" + clock.Source + ")"
	default:
		sync = fmt.Sprintf("clock offset %s ms ±%s ms (%s)", ms2(clock.Offset), ms2(clock.MaxError), clock.Source)
	}
	late := "started when ready"
	if !p.StartAt.IsZero() {
		late = "started " + ms2(startLate) + " ms after --start-at " + p.StartAt.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("Shard %s: %s; %s", p.Shard, late, sync)
}

func ms2(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) }
