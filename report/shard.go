package report

import (
	"github.com/servebench/servebench/internal/clock"

	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/option"
	"github.com/servebench/servebench/metrics"
)

// ShardFormat identifies a shard manifest file.
const ShardFormat = "servebench-shard/1"

// ShardManifestSuffix ends every shard manifest's name; merge looks for it
// in directories.
const ShardManifestSuffix = ".shard.json"

// ShardManifest describes one shard of a sharded run. It sits beside the
// shard's records file and carries everything merge needs to check that
// shards belong together and to print one result.
type ShardManifest struct {
	Format string `json:"format"`
	// ScheduleHash is workload.ScheduleHash over the full, unsharded
	// schedule.
	ScheduleHash string `json:"schedule_hash"`
	// Shard is this shard's index from 0; Shards is how many there are.
	Shard  int `json:"shard"`
	Shards int `json:"shards"`
	// TotalRequests is the full schedule's size; ShardRequests this shard's.
	TotalRequests int `json:"total_requests"`
	ShardRequests int `json:"shard_requests"`
	// Records is the records file, relative to the manifest's directory.
	Records string `json:"records"`
	Host    string `json:"host,omitempty"`

	// StartAt is the shared --start-at instant, nil when none was given.
	StartAt *time.Time `json:"start_at,omitempty"`
	// Started is the shard's zero instant (StartAt when given): records'
	// offsets count from it.
	Started time.Time `json:"started"`
	// StartLate is how much after StartAt the shard began sending.
	StartLate time.Duration `json:"start_late_ns"`
	Clock     ClockSync     `json:"clock"`

	// Duration is the shard's benchmark duration from Started.
	Duration    time.Duration `json:"duration_ns"`
	Interrupted bool          `json:"interrupted,omitempty"`
	NotSent     int           `json:"not_sent,omitempty"`

	Run     ShardRunInfo `json:"run"`
	Summary ShardOptions `json:"summary_options"`
}

// ShardOptions are the summary options every shard must share.
type ShardOptions struct {
	Percentiles []float64          `json:"percentiles"`
	Goodput     map[string]float64 `json:"goodput,omitempty"`
}

// ShardRunInfo is RunInfo as JSON (rates as strings: JSON has no inf).
type ShardRunInfo struct {
	Date              time.Time   `json:"date"`
	Backend           string      `json:"backend"`
	EndpointType      string      `json:"endpoint_type"`
	Label             string      `json:"label,omitempty"`
	ModelID           string      `json:"model_id"`
	TokenizerID       string      `json:"tokenizer_id,omitempty"`
	NumPrompts        int         `json:"num_prompts"`
	RequestRate       string      `json:"request_rate"`
	Burstiness        string      `json:"burstiness"`
	MaxConcurrency    int         `json:"max_concurrency,omitempty"`
	RampUp            *RampUp     `json:"ramp_up,omitempty"`
	Metadata          [][2]string `json:"metadata,omitempty"`
	PercentileMetrics []string    `json:"percentile_metrics"`
	Percentiles       []float64   `json:"metric_percentiles"`
	Goodput           bool        `json:"goodput,omitempty"`
}

// NewShardRunInfo converts in for a manifest.
func NewShardRunInfo(in *RunInfo) ShardRunInfo {
	return ShardRunInfo{
		Date: in.Date, Backend: in.Backend, EndpointType: in.EndpointType, Label: in.Label, ModelID: in.ModelID, TokenizerID: in.TokenizerID,
		NumPrompts: in.NumPrompts, RequestRate: strconv.FormatFloat(in.RequestRate, 'g', -1, 64),
		Burstiness: strconv.FormatFloat(in.Burstiness, 'g', -1, 64), MaxConcurrency: in.MaxConcurrency, RampUp: in.RampUp,
		Metadata: in.Metadata, PercentileMetrics: in.PercentileMetrics, Percentiles: in.Percentiles, Goodput: in.Goodput,
	}
}

// RunInfo converts back; rates that do not parse become NaN.
func (s ShardRunInfo) RunInfo() RunInfo {
	parse := func(v string) float64 {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	return RunInfo{
		Date: s.Date, Backend: s.Backend, EndpointType: s.EndpointType, Label: s.Label, ModelID: s.ModelID, TokenizerID: s.TokenizerID,
		NumPrompts: s.NumPrompts, RequestRate: parse(s.RequestRate), Burstiness: parse(s.Burstiness),
		MaxConcurrency: s.MaxConcurrency, RampUp: s.RampUp, Metadata: s.Metadata,
		PercentileMetrics: s.PercentileMetrics, Percentiles: s.Percentiles, Goodput: s.Goodput,
	}
}

// ShardManifestPath is where the manifest of a shard whose records go to
// recordsPath is written: beside it, ".records.jsonl" (or ".jsonl")
// replaced by ShardManifestSuffix.
func ShardManifestPath(recordsPath string) string {
	base := strings.TrimSuffix(strings.TrimSuffix(recordsPath, ".jsonl"), ".records")
	return base + ShardManifestSuffix
}

// MarshalShardManifest encodes m, indented, with a final newline.
func MarshalShardManifest(m *ShardManifest) ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode shard manifest: %w", err)
	}
	return append(b, '\n'), nil
}

// LoadedShard is one shard read from disk.
type LoadedShard struct {
	ManifestPath string
	RecordsPath  string
	Manifest     ShardManifest
	Records      []metrics.Record
	// Recovered marks records without a manifest: a shard (or a whole
	// run) killed before it finished. Its Manifest is empty until
	// MergeShards fills it from the others.
	Recovered bool
}

// LoadShards reads shards from paths: directories (every *.shard.json in
// them, not recursing, and every *.records.jsonl with no manifest or
// result beside it), manifest files, or records files. Records without a
// manifest are a run or shard killed before it finished, read as
// recovered (RecoveredNote).
func LoadShards(paths ...string) ([]LoadedShard, error) {
	if len(paths) == 0 {
		return nil, errors.New("no shards given: pass the directory holding the *.shard.json manifests, or the manifest files")
	}
	var manifests, orphans []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("shard %q: %w", p, err)
		}
		switch {
		case st.IsDir():
			found, err := filepath.Glob(filepath.Join(p, "*"+ShardManifestSuffix))
			if err != nil {
				return nil, fmt.Errorf("shard directory %q: %w", p, err)
			}
			records, _ := filepath.Glob(filepath.Join(p, "*"+recordsSuffix))
			var left []string
			for _, r := range records {
				if orphanRecords(r) {
					left = append(left, r)
				}
			}
			if len(found) == 0 && len(left) == 0 {
				return nil, option.Errorf("shard directory %q holds no *%s manifests and no records; pass the directory the shards wrote to (their {result_dir})", p, ShardManifestSuffix)
			}
			manifests = append(manifests, found...)
			orphans = append(orphans, left...)
		case strings.HasSuffix(p, ShardManifestSuffix):
			manifests = append(manifests, p)
		case strings.HasSuffix(p, ".jsonl"):
			m := ShardManifestPath(p)
			if _, err := os.Stat(m); err != nil {
				orphans = append(orphans, p)
				continue
			}
			manifests = append(manifests, m)
		default:
			return nil, fmt.Errorf("shard %q: expected a directory, a *%s manifest or a records .jsonl file", p, ShardManifestSuffix)
		}
	}
	slices.Sort(manifests)
	manifests = slices.Compact(manifests)
	slices.Sort(orphans)
	orphans = slices.Compact(orphans)
	shards := make([]LoadedShard, 0, len(manifests)+len(orphans))
	for _, m := range manifests {
		s, err := loadShard(m)
		if err != nil {
			return nil, err
		}
		shards = append(shards, s)
	}
	for _, path := range orphans {
		recs, _, err := ReadRecordsLenient(path)
		if err != nil {
			return nil, err
		}
		shards = append(shards, LoadedShard{RecordsPath: path, Records: recs, Recovered: true})
	}
	return shards, nil
}

func loadShard(manifestPath string) (LoadedShard, error) {
	data, err := os.ReadFile(manifestPath)
	if err != nil {
		return LoadedShard{}, fmt.Errorf("shard manifest: %w", err)
	}
	var m ShardManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return LoadedShard{}, fmt.Errorf("shard manifest %q: not valid JSON: %w", manifestPath, err)
	}
	if m.Format != ShardFormat {
		return LoadedShard{}, fmt.Errorf("shard manifest %q: format %q, want %q (written by another servebench version?)", manifestPath, m.Format, ShardFormat)
	}
	if m.Records == "" || filepath.IsAbs(m.Records) || strings.Contains(filepath.ToSlash(m.Records), "/") {
		return LoadedShard{}, fmt.Errorf("shard manifest %q: records %q must be a file name beside the manifest", manifestPath, m.Records)
	}
	recordsPath := filepath.Join(filepath.Dir(manifestPath), m.Records)
	fh, err := os.Open(recordsPath)
	if err != nil {
		return LoadedShard{}, fmt.Errorf("shard manifest %q: records: %w", manifestPath, err)
	}
	defer fh.Close()
	recs, err := DecodeRecords(fh, recordsPath)
	if err != nil {
		return LoadedShard{}, err
	}
	return LoadedShard{ManifestPath: manifestPath, RecordsPath: recordsPath, Manifest: m, Records: recs}, nil
}

// DecodeRecords reads a records JSONL stream, naming name and the line in
// errors. Blank lines are skipped.
func DecodeRecords(r io.Reader, name string) ([]metrics.Record, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var recs []metrics.Record
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var rec metrics.Record
			if jerr := json.Unmarshal(b, &rec); jerr != nil {
				if err == io.EOF {
					return nil, fmt.Errorf("records %q line %d: cut short (%v): the writer stopped mid-line", name, line, jerr)
				}
				return nil, fmt.Errorf("records %q line %d: %w", name, line, jerr)
			}
			recs = append(recs, rec)
		}
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("records %q: %w", name, err)
		}
	}
}

// ClockSync is a shard's wall-clock synchronization state when it started
// (kernel offset and error bounds), recorded in its manifest.
type ClockSync = clock.Sync

// WriteShardManifest writes m beside the shard's records file, atomically,
// and returns its path.
func WriteShardManifest(recordsPath string, m *ShardManifest) (string, error) {
	data, err := MarshalShardManifest(m)
	if err != nil {
		return "", err
	}
	path := ShardManifestPath(recordsPath)
	if err := WriteAtomic(path, data, false); err != nil {
		return "", fmt.Errorf("shard manifest: %w", err)
	}
	return path, nil
}
