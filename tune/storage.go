package tune

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/redact"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx": pure-Go PostgreSQL
	_ "modernc.org/sqlite"             // "sqlite": pure-Go SQLite, so CGO_ENABLED=0 builds work
)

// State is a trial's state.
type State string

const (
	// StateWaiting: sampled, then given back (interrupt, dead worker); the
	// next worker runs it with the same parameters and number.
	StateWaiting  State = "WAITING"
	StateRunning  State = "RUNNING"
	StateComplete State = "COMPLETE"
	// StateFailed: the server crashed, never became healthy or the load
	// test failed.
	StateFailed State = "FAILED"
	// StateInvalid: rejected by validation; never launched.
	StateInvalid State = "INVALID"
)

func (s State) finished() bool {
	return s == StateComplete || s == StateFailed || s == StateInvalid
}

// Capacity is what the memory profile predicts, or a launched server
// logged, about KV cache and memory.
type Capacity struct {
	GPUBlocks      int     `json:"gpu_blocks,omitempty"`
	KVCacheTokens  int     `json:"kv_cache_tokens,omitempty"`
	KVCacheGiB     float64 `json:"kv_cache_gib,omitempty"`
	WeightsGiB     float64 `json:"weights_gib,omitempty"`
	MaxConcurrency float64 `json:"max_concurrency,omitempty"`
	// GPUMemory is nvidia-smi's "used / total", e.g. "19344MiB / 46068MiB".
	GPUMemory string `json:"gpu_memory,omitempty"`
}

// Trial is one point of a study and what became of it.
type Trial struct {
	Number int    `json:"number"`
	State  State  `json:"state"`
	Params Point  `json:"params"`
	Worker string `json:"worker,omitempty"`
	// Score is what the sampler was told (maximised): the objective when
	// the SLO holds, less when it does not, 0 for failed or invalid trials.
	Score     float64  `json:"score"`
	Objective *float64 `json:"objective,omitempty"`
	SLOMet    *bool    `json:"slo_met,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	Details
	Attempts int       `json:"attempts"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
}

// Details are a trial's results beyond its score.
type Details struct {
	Repaired   []string       `json:"repaired,omitempty"`
	Margins    []MarginJSON   `json:"slo_margins,omitempty"`
	Predicted  *Capacity      `json:"predicted,omitempty"`
	Observed   *Capacity      `json:"observed,omitempty"`
	Result     map[string]any `json:"result,omitempty"`
	RateSearch map[string]any `json:"rate_search,omitempty"`
	LogTail    string         `json:"log_tail,omitempty"`
}

// MarginJSON is an SLO term's outcome.
type MarginJSON struct {
	Term   string  `json:"term"`
	Value  float64 `json:"value"`
	Margin float64 `json:"margin"`
	Met    bool    `json:"met"`
}

// Storage keeps studies and trials in SQLite or PostgreSQL through
// database/sql. It is our own small schema rather than goptuna's rdb.v2:
// resuming without lost or duplicated trials needs a WAITING/RUNNING
// life cycle with worker heartbeats, and an atomic claim of the next
// trial number under the budget, which goptuna's storage does not have.
type Storage struct {
	db       *sql.DB
	postgres bool
	// URL is what the storage was opened from, without a password.
	URL string
}

// OpenStorage opens "FILE.db", "sqlite:///FILE", "sqlite://FILE", a
// "postgresql://" / "postgres://" URL or a PostgreSQL key=value
// connection string, creating the schema if needed.
func OpenStorage(ctx context.Context, spec string) (*Storage, error) {
	ss, err := parseStorage(spec)
	if err != nil {
		return nil, err
	}
	s := &Storage{URL: ss.shown, postgres: ss.driver == "pgx"}
	s.db, err = sql.Open(ss.driver, ss.dsn)
	if err != nil {
		return nil, fmt.Errorf("--storage %s: %w", s.URL, redact.Error(err, ss.secrets))
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("--storage %s: %w", s.URL, redact.Error(err, ss.secrets))
	}
	return s, nil
}

// CheckStudyStorage is what a run checks of its storage before it opens
// it for writing, so a study never starts over without being asked:
//   - a storage that exists but holds no tune study (a zero-byte SQLite
//     file, or a database of another program) is refused unless
//     newStudy: its trials, if it had any, are gone, and starting afresh
//     in it would hide that;
//   - newStudy is refused when the study is already there, since it
//     would resume rather than start anew.
//
// A SQLite file that does not exist yet is a new study without asking.
// A PostgreSQL database is the user's to create, so one without tune's
// tables is a first run. It writes nothing.
func CheckStudyStorage(ctx context.Context, spec, study string, newStudy bool) error {
	ss, err := parseStorage(spec)
	if err != nil {
		return err
	}
	var size int64 = -1
	dsn := ss.dsn
	if ss.driver == "sqlite" {
		st, err := os.Stat(ss.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return fmt.Errorf("--storage %s: %w", ss.shown, err)
		case !st.Mode().IsRegular():
			return fmt.Errorf("--storage %s: not a file; give the study's SQLite file", ss.shown)
		}
		size = st.Size()
		// Read-only and without the WAL pragma: looking writes nothing.
		dsn = "file:" + ss.path + "?mode=ro&_pragma=busy_timeout(30000)"
	}
	db, err := sql.Open(ss.driver, dsn)
	if err != nil {
		return fmt.Errorf("--storage %s: %w", ss.shown, redact.Error(err, ss.secrets))
	}
	defer db.Close()
	trials, exists, schema, err := studyPresence(ctx, db, ss.driver, study)
	if err != nil {
		if ss.driver == "sqlite" {
			return fmt.Errorf("--storage %s: not a study file (%w); give the study's SQLite file, or a new file name", ss.shown, err)
		}
		return fmt.Errorf("--storage %s: %w", ss.shown, redact.Error(err, ss.secrets))
	}
	switch {
	case newStudy && exists:
		return fmt.Errorf("--new-study: study %q already exists in %s with %d trials; drop --new-study to resume it, or choose another --study", study, ss.shown, trials)
	case !newStudy && ss.driver == "sqlite" && !schema:
		what := "is a SQLite database without tune's tables"
		if size == 0 {
			what = "is empty (0 bytes)"
		}
		return fmt.Errorf("--storage %s %s: it holds no study, so any trials it had are gone; pass --new-study to start a new study in it, or point --storage at the study's file", ss.shown, what)
	}
	return nil
}

// studyPresence says whether db holds tune's tables, the study, and how
// many trials the study has.
func studyPresence(ctx context.Context, db *sql.DB, driver, study string) (trials int, exists, schema bool, err error) {
	probe := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'tune_studies'`
	arg := func(q string) string { return strings.ReplaceAll(q, "$", "?") }
	if driver == "pgx" {
		probe = `SELECT COUNT(*) FROM pg_catalog.pg_tables WHERE tablename = 'tune_studies' AND schemaname = ANY(current_schemas(false))`
		arg = func(q string) string { return q }
	}
	var n int
	if err := db.QueryRowContext(ctx, probe).Scan(&n); err != nil {
		return 0, false, false, err
	}
	if n == 0 {
		return 0, false, false, nil
	}
	if err := db.QueryRowContext(ctx, arg(`SELECT COUNT(*) FROM tune_studies WHERE name = $1`), study).Scan(&n); err != nil {
		return 0, false, true, err
	}
	if n == 0 {
		return 0, false, true, nil
	}
	if err := db.QueryRowContext(ctx, arg(`SELECT COUNT(*) FROM tune_trials WHERE study = $1`), study).Scan(&trials); err != nil {
		return 0, true, true, err
	}
	return trials, true, true, nil
}

// Close closes the database.
func (s *Storage) Close() error { return s.db.Close() }

// q rewrites $1-style placeholders for SQLite, which takes ?NNN.
func (s *Storage) q(query string) string {
	if s.postgres {
		return query
	}
	return strings.ReplaceAll(query, "$", "?")
}

func (s *Storage) migrate(ctx context.Context) error {
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS tune_studies (name TEXT PRIMARY KEY, config TEXT NOT NULL, created BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS tune_trials (
			study TEXT NOT NULL, number INTEGER NOT NULL, state TEXT NOT NULL, params TEXT NOT NULL,
			score DOUBLE PRECISION NOT NULL DEFAULT 0, objective DOUBLE PRECISION, slo_met INTEGER,
			reason TEXT NOT NULL DEFAULT '', details TEXT NOT NULL DEFAULT '{}', worker TEXT NOT NULL DEFAULT '',
			heartbeat BIGINT NOT NULL DEFAULT 0, started BIGINT NOT NULL DEFAULT 0, finished BIGINT NOT NULL DEFAULT 0,
			attempts INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (study, number))`,
	}
	for _, st := range stmts {
		var err error
		// Two workers creating the schema at once race in PostgreSQL's
		// catalog; the loser retries and finds the table.
		for attempt := range 3 {
			if _, err = s.db.ExecContext(ctx, st); err == nil || attempt == 2 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("creating the schema: %w", err)
		}
	}
	return nil
}

// EnsureStudy creates the study, or checks that an existing one was
// started with the same config (the space and objective: trials of
// another space would mislead the sampler).
func (s *Storage) EnsureStudy(ctx context.Context, name, config string) (created bool, err error) {
	res, err := s.db.ExecContext(ctx, s.q(`INSERT INTO tune_studies(name, config, created) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`),
		name, config, time.Now().UnixNano())
	if err != nil {
		return false, fmt.Errorf("creating study %q: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, nil
	}
	var existing string
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT config FROM tune_studies WHERE name = $1`), name).Scan(&existing); err != nil {
		return false, fmt.Errorf("reading study %q: %w", name, err)
	}
	if existing != config {
		return false, fmt.Errorf("study %q in %s was started with another search space, objective or target (%s); resume it with the same flags, or pass a new --study name", name, s.URL, existing)
	}
	return false, nil
}

// StudyConfig returns the config a study was created with.
func (s *Storage) StudyConfig(ctx context.Context, name string) (string, error) {
	var c string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT config FROM tune_studies WHERE name = $1`), name).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("no study %q in %s", name, s.URL)
	}
	return c, err
}

const trialColumns = `number, state, params, score, objective, slo_met, reason, details, worker, started, finished, attempts`

func scanTrial(row interface{ Scan(...any) error }) (Trial, error) {
	var t Trial
	var params, details string
	var objective sql.NullFloat64
	var sloMet sql.NullInt64
	var started, finished int64
	if err := row.Scan(&t.Number, &t.State, &params, &t.Score, &objective, &sloMet, &t.Reason, &details, &t.Worker, &started, &finished, &t.Attempts); err != nil {
		return t, err
	}
	if err := json.Unmarshal([]byte(params), &t.Params); err != nil {
		return t, fmt.Errorf("trial %d params: %w", t.Number, err)
	}
	if err := json.Unmarshal([]byte(details), &t.Details); err != nil {
		return t, fmt.Errorf("trial %d details: %w", t.Number, err)
	}
	if objective.Valid {
		t.Objective = &objective.Float64
	}
	if sloMet.Valid {
		met := sloMet.Int64 == 1
		t.SLOMet = &met
	}
	if started > 0 {
		t.Started = time.Unix(0, started)
	}
	if finished > 0 {
		t.Finished = time.Unix(0, finished)
	}
	return t, nil
}

// Trials returns a study's trials by number.
func (s *Storage) Trials(ctx context.Context, study string) ([]Trial, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+trialColumns+` FROM tune_trials WHERE study = $1 ORDER BY number`), study)
	if err != nil {
		return nil, fmt.Errorf("reading trials: %w", err)
	}
	defer rows.Close()
	var out []Trial
	for rows.Next() {
		t, err := scanTrial(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// ClaimWaiting takes the lowest WAITING trial for worker; ok is false
// when there is none.
func (s *Storage) ClaimWaiting(ctx context.Context, study, worker string) (Trial, bool, error) {
	for {
		var number int
		err := s.db.QueryRowContext(ctx, s.q(`SELECT MIN(number) FROM tune_trials WHERE study = $1 AND state = 'WAITING' HAVING COUNT(*) > 0`), study).Scan(&number)
		if errors.Is(err, sql.ErrNoRows) {
			return Trial{}, false, nil
		}
		if err != nil {
			return Trial{}, false, fmt.Errorf("looking for a waiting trial: %w", err)
		}
		now := time.Now().UnixNano()
		row := s.db.QueryRowContext(ctx, s.q(`UPDATE tune_trials SET state = 'RUNNING', worker = $1, heartbeat = $2, started = $2, attempts = attempts + 1
			WHERE study = $3 AND number = $4 AND state = 'WAITING' RETURNING `+trialColumns), worker, now, study, number)
		t, err := scanTrial(row)
		if errors.Is(err, sql.ErrNoRows) {
			continue // another worker took it first
		}
		if err != nil {
			return Trial{}, false, fmt.Errorf("claiming trial %d: %w", number, err)
		}
		return t, true, nil
	}
}

// ClaimNew stores p as the study's next trial, RUNNING for worker, unless
// budget trials already exist; ok is false then. The number is assigned
// in the same statement, so two workers never share one or overrun the
// budget.
func (s *Storage) ClaimNew(ctx context.Context, study, worker string, p Point, budget int) (Trial, bool, error) {
	params, err := json.Marshal(p)
	if err != nil {
		return Trial{}, false, err
	}
	for attempt := 0; ; attempt++ {
		now := time.Now().UnixNano()
		row := s.db.QueryRowContext(ctx, s.q(`INSERT INTO tune_trials(study, number, state, params, worker, heartbeat, started, attempts)
			SELECT $1, COALESCE(MAX(number) + 1, 0), 'RUNNING', $2, $3, $4, $4, 1 FROM tune_trials WHERE study = $1
			HAVING COALESCE(MAX(number) + 1, 0) < $5
			RETURNING `+trialColumns), study, string(params), worker, now, budget)
		t, err := scanTrial(row)
		if errors.Is(err, sql.ErrNoRows) {
			return Trial{}, false, nil
		}
		if err != nil && attempt < 20 && isConflict(err) {
			continue // PostgreSQL: another worker took this number first
		}
		if err != nil {
			return Trial{}, false, fmt.Errorf("storing a new trial: %w", err)
		}
		return t, true, nil
	}
}

func isConflict(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "23505") || strings.Contains(msg, "UNIQUE constraint") || strings.Contains(msg, "duplicate key")
}

// Heartbeat marks worker's trial alive; ok is false when the trial is no
// longer this worker's (a reaper gave it away).
func (s *Storage) Heartbeat(ctx context.Context, study string, number int, worker string) (bool, error) {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE tune_trials SET heartbeat = $1 WHERE study = $2 AND number = $3 AND worker = $4 AND state = 'RUNNING'`),
		time.Now().UnixNano(), study, number, worker)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Finish records t's outcome if it is still worker's running trial.
func (s *Storage) Finish(ctx context.Context, study, worker string, t Trial) (bool, error) {
	details, err := json.Marshal(t.Details)
	if err != nil {
		return false, err
	}
	params, err := json.Marshal(t.Params)
	if err != nil {
		return false, err
	}
	var objective sql.NullFloat64
	if t.Objective != nil {
		objective = sql.NullFloat64{Float64: *t.Objective, Valid: true}
	}
	var slo sql.NullInt64
	if t.SLOMet != nil {
		slo.Valid = true
		if *t.SLOMet {
			slo.Int64 = 1
		}
	}
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE tune_trials SET state = $1, params = $2, score = $3, objective = $4, slo_met = $5, reason = $6, details = $7, finished = $8
		WHERE study = $9 AND number = $10 AND worker = $11 AND state = 'RUNNING'`),
		string(t.State), string(params), t.Score, objective, slo, t.Reason, string(details), time.Now().UnixNano(), study, t.Number, worker)
	if err != nil {
		return false, fmt.Errorf("recording trial %d: %w", t.Number, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Release gives worker's running trial back as WAITING (interrupted).
func (s *Storage) Release(ctx context.Context, study string, number int, worker string) error {
	_, err := s.db.ExecContext(ctx, s.q(`UPDATE tune_trials SET state = 'WAITING', worker = '' WHERE study = $1 AND number = $2 AND worker = $3 AND state = 'RUNNING'`),
		study, number, worker)
	return err
}

// Reap gives back RUNNING trials whose worker is dead: silent for longer
// than staleAfter, or, on this host, a process that no longer exists.
// It returns the trial numbers it gave back.
func (s *Storage) Reap(ctx context.Context, study string, staleAfter time.Duration, dead func(worker string) bool) ([]int, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT number, worker, heartbeat FROM tune_trials WHERE study = $1 AND state = 'RUNNING'`), study)
	if err != nil {
		return nil, fmt.Errorf("looking for stale trials: %w", err)
	}
	type running struct {
		number    int
		worker    string
		heartbeat int64
	}
	var all []running
	for rows.Next() {
		var r running
		if err := rows.Scan(&r.number, &r.worker, &r.heartbeat); err != nil {
			rows.Close()
			return nil, err
		}
		all = append(all, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var reaped []int
	cutoff := time.Now().Add(-staleAfter).UnixNano()
	for _, r := range all {
		if r.heartbeat >= cutoff && (dead == nil || !dead(r.worker)) {
			continue
		}
		res, err := s.db.ExecContext(ctx, s.q(`UPDATE tune_trials SET state = 'WAITING', worker = '' WHERE study = $1 AND number = $2 AND worker = $3 AND state = 'RUNNING' AND heartbeat = $4`),
			study, r.number, r.worker, r.heartbeat)
		if err != nil {
			return reaped, err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			reaped = append(reaped, r.number)
		}
	}
	return reaped, nil
}

// workerID names a worker "host:pid:nonce" so a reaper on the same host
// can tell a dead process at once.
func workerID(host string, pid int, nonce int64) string {
	return host + ":" + strconv.Itoa(pid) + ":" + strconv.FormatInt(nonce, 36)
}

func parseWorkerID(id string) (host string, pid int, ok bool) {
	parts := strings.Split(id, ":")
	if len(parts) != 3 {
		return "", 0, false
	}
	pid, err := strconv.Atoi(parts[1])
	return parts[0], pid, err == nil
}
