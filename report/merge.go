package report

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/option"
	"github.com/servebench/servebench/metrics"
)

// MissingShardsError reports shards of a run that were not given.
type MissingShardsError struct {
	Missing []int
	Shards  int
}

func (e *MissingShardsError) Error() string {
	names := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		names[i] = strconv.Itoa(m) + "/" + strconv.Itoa(e.Shards)
	}
	return fmt.Sprintf("missing shard%s %s: have %d of %d (pass every shard's manifest, or the directory holding them all)",
		pluralSuffix(len(e.Missing)), strings.Join(names, ", "), e.Shards-len(e.Missing), e.Shards)
}

// MissingRequestsError reports requests of the schedule with no record.
type MissingRequestsError struct {
	// Count is how many are missing; Missing holds the first few global
	// indices, ascending.
	Count   int
	Missing []int
	// Why names the shards that lost requests and what their manifests say.
	Why string
}

func (e *MissingRequestsError) Error() string {
	parts := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		parts[i] = strconv.Itoa(m)
	}
	list := strings.Join(parts, ", ")
	if e.Count > len(e.Missing) {
		list += ", …"
	}
	return fmt.Sprintf("%d request%s of the schedule have no record (%s)%s", e.Count, pluralSuffix(e.Count), list, e.Why)
}

func pluralSuffix(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// maxMergeShards bounds a manifest's shard count, which sizes merge's
// per-shard tables.
const maxMergeShards = 1 << 16

// VirtualClock is the clock source of simulated shards.
const VirtualClock = "virtual"

// ShardReport is one shard's part of a merged run.
type ShardReport struct {
	Shard, Shards int
	Host          string
	Requests      int
	StartLate     time.Duration
	// Shift is how much later than the earliest shard this shard's zero
	// was; it is added to its records' times on the merged timeline.
	Shift   time.Duration
	SendLag metrics.Distribution
	Clock   ClockSync
	// Recovered marks a shard read from its records alone; Path is its
	// records file.
	Recovered bool
	Path      string
}

// Merged is the result of merging shards: one Result computed from every
// record, and each shard's own numbers.
type Merged struct {
	Result       *Result
	ScheduleHash string
	Shards       []ShardReport
}

// MergeShards checks that shards are every shard of one run, each once,
// with every request of the schedule recorded exactly once, and computes
// one result from all their records: percentiles over all records, never
// from per-shard percentiles. Records are placed on one timeline whose
// zero is the earliest shard's; with a shared --start-at every shard has
// that zero. The result's Records hold every record, by global index.
func MergeShards(shards []LoadedShard) (*Merged, error) {
	if len(shards) == 0 {
		return nil, errors.New("no shards to merge")
	}
	firstManifest := slices.IndexFunc(shards, func(s LoadedShard) bool { return !s.Recovered })
	if firstManifest < 0 {
		return mergeRecovered(shards)
	}
	shards = slices.Clone(shards)
	first := &shards[firstManifest]
	anyRecovered := false
	for i := range shards {
		if shards[i].Recovered {
			if err := fillRecoveredManifest(&shards[i], first); err != nil {
				return nil, err
			}
			anyRecovered = true
		}
	}
	for i := 0; i < len(shards); i++ {
		if err := sameRun(first, &shards[i]); err != nil {
			return nil, err
		}
	}
	byIndex, err := shardsByIndex(shards, first)
	if err != nil {
		return nil, err
	}

	total := first.Manifest.TotalRequests
	zero := first.Manifest.Started
	for _, s := range byIndex {
		if s.Manifest.Started.Before(zero) {
			zero = s.Manifest.Started
		}
	}
	merged := &Merged{ScheduleHash: first.Manifest.ScheduleHash}
	placed, err := placeRecords(byIndex, total, zero, merged)
	if err != nil {
		return nil, err
	}
	// A shard that died before it finished lost what it never sent: the
	// result covers what was recorded, and says so.
	if err := checkComplete(total, placed.recorded, placed.perShard, byIndex); err != nil && !anyRecovered {
		return nil, err
	}

	opts := metrics.Options{Percentiles: first.Manifest.Summary.Percentiles, Goodput: first.Manifest.Summary.Goodput}
	acc := metrics.NewAccumulator(opts)
	all := placed.all
	slices.SortFunc(all, func(a, b metrics.Record) int { return a.Index - b.Index })
	for i := range all {
		acc.Add(&all[i])
	}
	info := first.Manifest.Run.RunInfo()
	info.Date = zero
	if zero.IsZero() {
		// Simulated shards share the virtual clock's zero; the run's date
		// is the earliest shard's.
		for _, s := range byIndex {
			if d := s.Manifest.Run.Date; info.Date.IsZero() || d.Before(info.Date) {
				info.Date = d
			}
		}
	}
	info.Interrupted = placed.interrupted || anyRecovered
	info.Recovered = anyRecovered
	merged.Result = &Result{Info: info, Summary: acc.Summary(placed.duration), Records: all}
	merged.Result.Extra = []Section{{Key: "shards", Value: shardsJSON(merged)}}
	return merged, nil
}

// shardsByIndex places every shard at its index, refusing a count out of
// range, a shard out of range or given twice, and missing shards.
func shardsByIndex(shards []LoadedShard, first *LoadedShard) ([]*LoadedShard, error) {
	count := first.Manifest.Shards
	if count < 1 || count > maxMergeShards {
		return nil, fmt.Errorf("shard manifest %q: shards %d: must be from 1 to %d", first.ManifestPath, count, maxMergeShards)
	}
	if first.Manifest.TotalRequests < 0 {
		return nil, fmt.Errorf("shard manifest %q: total requests %d: must not be negative", first.ManifestPath, first.Manifest.TotalRequests)
	}
	byIndex := make([]*LoadedShard, count)
	for i := range shards {
		s := &shards[i]
		idx := s.Manifest.Shard
		if idx < 0 || idx >= count {
			return nil, fmt.Errorf("shard manifest %q: shard %d of %d is out of range", s.ManifestPath, idx, count)
		}
		if prev := byIndex[idx]; prev != nil {
			return nil, fmt.Errorf("shard %d/%d given twice: %s and %s (each shard must be merged once)", idx, count, prev.ManifestPath, s.ManifestPath)
		}
		byIndex[idx] = s
	}
	var missing []int
	for i, s := range byIndex {
		if s == nil {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		return nil, &MissingShardsError{Missing: missing, Shards: count}
	}

	return byIndex, nil
}

// placedRecords are the shards' records on the merged timeline.
type placedRecords struct {
	all []metrics.Record
	// recorded is keyed by global index, so a manifest's claimed total
	// never sizes an allocation: only records that exist take memory.
	recorded    map[int]bool
	perShard    []int
	duration    time.Duration
	interrupted bool
}

// placeRecords shifts every shard's records onto the timeline whose zero
// is zero, checking each is in its shard and recorded once, and adds each
// shard's report to merged.
func placeRecords(byIndex []*LoadedShard, total int, zero time.Time, merged *Merged) (placedRecords, error) {
	count := len(byIndex)
	p := placedRecords{recorded: map[int]bool{}, perShard: make([]int, count)}
	for idx, s := range byIndex {
		m := &s.Manifest
		shift := m.Started.Sub(zero)
		shardAcc := metrics.NewAccumulator(metrics.Options{Percentiles: []float64{50, 99}})
		for _, rec := range s.Records {
			if rec.Warmup {
				continue
			}
			i := rec.Index
			switch {
			case i < 0 || i >= total:
				return p, fmt.Errorf("records %q: request %d is outside the schedule of %d requests", s.RecordsPath, i, total)
			case i%count != idx:
				return p, fmt.Errorf("records %q: request %d belongs to shard %d/%d, not %d/%d: the records and manifest do not match", s.RecordsPath, i, i%count, count, idx, count)
			case p.recorded[i]:
				return p, fmt.Errorf("request %d recorded twice in %s: a request must be recorded once", i, s.RecordsPath)
			}
			p.recorded[i] = true
			p.perShard[idx]++
			rec.Dispatched += shift
			rec.Start += shift
			shardAcc.Add(&rec)
			p.all = append(p.all, rec)
		}
		p.duration = max(p.duration, shift+m.Duration)
		p.interrupted = p.interrupted || m.Interrupted
		merged.Shards = append(merged.Shards, ShardReport{
			Shard: idx, Shards: count, Host: m.Host, Requests: len(s.Records), StartLate: m.StartLate, Shift: shift,
			SendLag: shardAcc.Summary(0).SendLag, Clock: m.Clock, Recovered: s.Recovered,
		})
	}
	return p, nil
}

// sameRun reports the first way b is not a shard of a's run.
func sameRun(a, b *LoadedShard) error {
	ma, mb := &a.Manifest, &b.Manifest
	differ := func(what, va, vb, hint string) error {
		// what and hint are constants of this function: they may name options.
		return option.Errorf("%s has "+what+" %s but %s has "+what+" %s: not shards of one run ("+hint+")", b.ManifestPath, vb, a.ManifestPath, va)
	}
	startAt := func(t *time.Time) string {
		if t == nil {
			return "none"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	switch {
	case ma.ScheduleHash != mb.ScheduleHash:
		return differ("schedule hash", ma.ScheduleHash, mb.ScheduleHash, "every shard needs the same seed, dataset, lengths and request rate")
	case ma.Shards != mb.Shards:
		return differ("shard count", strconv.Itoa(ma.Shards), strconv.Itoa(mb.Shards), "every shard needs the same {shard} COUNT")
	case ma.TotalRequests != mb.TotalRequests:
		return differ("total requests", strconv.Itoa(ma.TotalRequests), strconv.Itoa(mb.TotalRequests), "every shard needs the same {num_prompts}")
	case startAt(ma.StartAt) != startAt(mb.StartAt):
		return differ("{start_at}", startAt(ma.StartAt), startAt(mb.StartAt), "every shard of a run starts at one instant")
	case ma.Run.ModelID != mb.Run.ModelID || ma.Run.Backend != mb.Run.Backend:
		return differ("model and backend", ma.Run.ModelID+" "+ma.Run.Backend, mb.Run.ModelID+" "+mb.Run.Backend, "every shard must target the same model")
	case ma.Run.MaxConcurrency != mb.Run.MaxConcurrency:
		return differ("{max_concurrency}", strconv.Itoa(ma.Run.MaxConcurrency), strconv.Itoa(mb.Run.MaxConcurrency), "every shard needs the same flags")
	case !slices.Equal(ma.Summary.Percentiles, mb.Summary.Percentiles) || !maps.Equal(ma.Summary.Goodput, mb.Summary.Goodput) ||
		!slices.Equal(ma.Run.PercentileMetrics, mb.Run.PercentileMetrics):
		return differ("summary options", fmt.Sprint(ma.Summary, ma.Run.PercentileMetrics), fmt.Sprint(mb.Summary, mb.Run.PercentileMetrics),
			"every shard needs the same {percentile_metrics}, {metric_percentiles} and {goodput}")
	}
	return nil
}

// checkComplete reports the requests of a total-request schedule that
// have no record, naming the shards that lost them.
func checkComplete(total int, recorded map[int]bool, perShard []int, byIndex []*LoadedShard) error {
	if len(recorded) == total {
		return nil
	}
	count := len(byIndex)
	var first []int
	for i := 0; i < total && len(first) < 5; i++ {
		if !recorded[i] {
			first = append(first, i)
		}
	}
	var why []string
	for idx, got := range perShard {
		owned := (total - idx + count - 1) / count
		if got == owned {
			continue
		}
		m := &byIndex[idx].Manifest
		reason := fmt.Sprintf("has %d of its %d: did it crash?", got, owned)
		if m.Interrupted {
			reason = fmt.Sprintf("interrupted, %d never sent", m.NotSent)
		}
		why = append(why, fmt.Sprintf("shard %d/%d %s", idx, count, reason))
	}
	return &MissingRequestsError{Count: total - len(recorded), Missing: first, Why: ": " + strings.Join(why, "; ") + "; rerun the run or the shard"}
}

func shardsJSON(m *Merged) map[string]any {
	list := make([]map[string]any, 0, len(m.Shards))
	for _, s := range m.Shards {
		p99, _ := s.SendLag.At(99)
		list = append(list, map[string]any{
			"shard": s.Shard, "host": s.Host, "requests": s.Requests,
			"start_late_ms": durationMS(s.StartLate), "start_shift_ms": durationMS(s.Shift),
			"send_lag_mean_ms": s.SendLag.Mean, "send_lag_p99_ms": p99, "send_lag_max_ms": s.SendLag.Max,
			"clock": s.Clock,
		})
	}
	return map[string]any{"schedule_hash": m.ScheduleHash, "count": len(m.Shards), "shards": list}
}

// ShardRows are the rows of the "Shards" text section: per shard, its
// requests, start lateness and send lag, and its clock's sync state.
func (m *Merged) ShardRows() [][2]string {
	rows := make([][2]string, 0, len(m.Shards))
	for _, s := range m.Shards {
		p99, _ := s.SendLag.At(99)
		clock := "clock unknown"
		if c := s.Clock; c.Source == VirtualClock {
			clock = "virtual clock"
		} else if c.Source != "unknown" && c.Source != "" {
			clock = fmt.Sprintf("clock offset %s ms ±%s ms", f2(durationMS(c.Offset)), f2(durationMS(c.MaxError)))
			if !c.Synchronized {
				clock = "clock not synchronized"
			}
		}
		if s.Recovered {
			clock = RecoveredNote
		}
		if m.ScheduleHash == "" {
			// Records files alone: no schedule, start or send lag to show.
			rows = append(rows, [2]string{fmt.Sprintf("File %d/%d:", s.Shard+1, s.Shards), fmt.Sprintf("%d req, %s (%s)", s.Requests, RecoveredNote, s.Path)})
			continue
		}
		rows = append(rows, [2]string{
			fmt.Sprintf("Shard %d/%d:", s.Shard, s.Shards),
			fmt.Sprintf("%d req, start late %s ms, send lag p99 %s ms max %s ms, %s", s.Requests, f2(durationMS(s.StartLate+s.Shift)), f2(p99), f2(s.SendLag.Max), clock),
		})
	}
	return rows
}

// shardName matches the records file bench names a shard's by default.
var shardName = regexp.MustCompile(`shard-(\d+)-of-(\d+)\.records\.jsonl$`)

// fillRecoveredManifest gives a shard that died without its manifest the
// run's (from first), its index from its file name, and the time its
// records span. With a shared --start-at the shard's zero is that
// instant; without, it is taken as first's.
func fillRecoveredManifest(s *LoadedShard, first *LoadedShard) error {
	match := shardName.FindStringSubmatch(filepath.Base(s.RecordsPath))
	if match == nil {
		return option.Errorf("records %q have no shard manifest, and the name does not say which shard they are (shard-I-of-N.records.jsonl, as {shard} writes): merge it alone, or rename it", s.RecordsPath)
	}
	idx, _ := strconv.Atoi(match[1])
	count, _ := strconv.Atoi(match[2])
	if count != first.Manifest.Shards {
		return fmt.Errorf("records %q are shard %d of %d, but %s is of %d shards: not shards of one run", s.RecordsPath, idx, count, first.ManifestPath, first.Manifest.Shards)
	}
	m := first.Manifest
	m.Shard, m.ShardRequests, m.Records, m.Host, m.Clock = idx, len(s.Records), filepath.Base(s.RecordsPath), "", ClockSync{}
	if m.StartAt != nil {
		m.Started = *m.StartAt
	}
	m.StartLate, m.Interrupted, m.NotSent, m.Duration = 0, true, 0, 0
	for _, r := range s.Records {
		m.Duration = max(m.Duration, r.End())
	}
	s.Manifest, s.ManifestPath = m, s.RecordsPath
	return nil
}

// mergeRecovered is a run of records files alone (a bench or its shards
// killed before any manifest or result was written): every record once,
// summarised as RecoveredResult does.
func mergeRecovered(shards []LoadedShard) (*Merged, error) {
	seen := map[int]string{}
	var all []metrics.Record
	var date time.Time
	merged := &Merged{}
	for i, s := range shards {
		for _, rec := range s.Records {
			if rec.Warmup {
				continue
			}
			if prev, dup := seen[rec.Index]; dup {
				return nil, fmt.Errorf("request %d recorded in %s and %s: records of two runs? merge each run alone", rec.Index, prev, s.RecordsPath)
			}
			seen[rec.Index] = s.RecordsPath
			all = append(all, rec)
		}
		if st, err := os.Stat(s.RecordsPath); err == nil && (date.IsZero() || st.ModTime().Before(date)) {
			date = st.ModTime()
		}
		merged.Shards = append(merged.Shards, ShardReport{Shard: i, Shards: len(shards), Requests: len(s.Records), Recovered: true, Path: s.RecordsPath})
	}
	if len(all) == 0 {
		return nil, errors.New("the records hold no measured request: the run stopped before any finished")
	}
	slices.SortFunc(all, func(a, b metrics.Record) int { return a.Index - b.Index })
	merged.Result = RecoveredResult("", date, all)
	return merged, nil
}
