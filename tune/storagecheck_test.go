package tune

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStudyStorageNeverStartsOverUnasked: a storage that exists but holds
// no study is refused unless --new-study, and looking writes nothing;
// --new-study is refused where the study already exists.
func TestStudyStorageNeverStartsOverUnasked(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign.db")
	db, err := sql.Open("sqlite", "file:"+foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE photos (id INTEGER)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	notSQLite := filepath.Join(dir, "notes.db")
	if err := os.WriteFile(notSQLite, []byte("shopping list: eggs, milk, bread and more bread for the ducks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withStudy := filepath.Join(dir, "study.db")
	seedStudy(t, withStudy, "s", 2)

	tests := []struct {
		name, storage, study string
		newStudy             bool
		wantErr              []string // "" parts: no error
	}{
		{"missing file is a new study", filepath.Join(dir, "fresh.db"), "s", false, nil},
		{"zero-byte file refused", empty, "s", false, []string{"empty.db is empty (0 bytes)", "--new-study"}},
		{"zero-byte file with --new-study", empty, "s", true, nil},
		{"another program's database refused", foreign, "s", false, []string{"without tune's tables", "--new-study"}},
		{"not SQLite at all", notSQLite, "s", false, []string{"not a study file"}},
		{"existing study resumes", withStudy, "s", false, nil},
		{"another study in the same file", withStudy, "other", false, nil},
		{"--new-study over an existing study refused", withStudy, "s", true, []string{`study "s" already exists`, "2 trials"}},
		{"--new-study for a new name in a shared file", withStudy, "other", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fileBytes(t, tt.storage)
			err := CheckStudyStorage(ctx, tt.storage, tt.study, tt.newStudy)
			if len(tt.wantErr) == 0 && err != nil {
				t.Fatalf("error %v, want none", err)
			}
			for _, part := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), part) {
					t.Errorf("error %v, want it to contain %q", err, part)
				}
			}
			if after := fileBytes(t, tt.storage); after != before {
				t.Errorf("the check changed %s (%d bytes before, %d after)", tt.storage, len(before), len(after))
			}
		})
	}
}

// TestStudyStorageCheckOnPostgreSQL: in PostgreSQL a database without
// tune's tables is a first run, and --new-study over an existing study is
// refused as in SQLite.
func TestStudyStorageCheckOnPostgreSQL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster (about 2 s)")
	}
	ctx := context.Background()
	url := startPostgres(t)
	if err := CheckStudyStorage(ctx, url, "s", false); err != nil {
		t.Fatalf("empty database: %v, want a first run", err)
	}
	store, err := OpenStorage(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.EnsureStudy(ctx, "s", "cfg"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.ClaimNew(ctx, "s", "w", Point{}, 5); err != nil {
		t.Fatal(err)
	}
	if err := CheckStudyStorage(ctx, url, "s", false); err != nil {
		t.Errorf("resume: %v", err)
	}
	err = CheckStudyStorage(ctx, url, "s", true)
	if err == nil || !strings.Contains(err.Error(), `study "s" already exists`) || !strings.Contains(err.Error(), "1 trials") {
		t.Errorf("--new-study over an existing study: %v", err)
	}
	if err := CheckStudyStorage(ctx, url, "other", true); err != nil {
		t.Errorf("--new-study for a new name: %v", err)
	}
}

// seedStudy stores study with n trials in a new SQLite file.
func seedStudy(t *testing.T, path, study string, n int) {
	t.Helper()
	ctx := context.Background()
	store, err := OpenStorage(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.EnsureStudy(ctx, study, "cfg"); err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, ok, err := store.ClaimNew(ctx, study, "w", Point{}, n); err != nil || !ok {
			t.Fatalf("storing a trial: %v %v", ok, err)
		}
	}
}

func fileBytes(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestStorageSpecsKeepPasswordsOutOfWhatIsShown(t *testing.T) {
	tests := []struct {
		spec, driver, shown, rest, password string
	}{
		{"postgresql://tune:pw-PLANTED@db:5432/tune", "pgx", "postgresql://tune:[REDACTED]@db:5432/tune", "postgresql://tune@db:5432/tune", "pw-PLANTED"},
		{"postgres://tune@db/tune?password=pw-PLANTED&sslmode=disable", "pgx", "postgres://tune@db/tune?password=[REDACTED]&sslmode=disable", "postgres://tune@db/tune?sslmode=disable", "pw-PLANTED"},
		{"host=db dbname=tune user=tune password=pw-PLANTED", "pgx", "host=db dbname=tune user=tune password=[REDACTED]", "host=db dbname=tune user=tune", "pw-PLANTED"},
		{"host = db  password = 'pw-PLANTED x\\'y' sslmode=disable", "pgx", "host=db password=[REDACTED] sslmode=disable", "host=db sslmode=disable", "pw-PLANTED x'y"},
		{"postgresql://tune@db/tune", "pgx", "postgresql://tune@db/tune", "postgresql://tune@db/tune", ""},
		{"study.db", "sqlite", "study.db", "", ""},
		{"my=study.db", "sqlite", "my=study.db", "", ""},
		{"sqlite:///runs/study.db", "sqlite", "sqlite:///runs/study.db", "", ""},
	}
	for _, tt := range tests {
		s, err := parseStorage(tt.spec)
		if err != nil {
			t.Fatalf("parseStorage(%q): %v", tt.spec, err)
		}
		if s.driver != tt.driver || s.shown != tt.shown {
			t.Errorf("parseStorage(%q) = %s, shown %q; want %s, %q", tt.spec, s.driver, s.shown, tt.driver, tt.shown)
		}
		if tt.driver != "pgx" {
			if _, _, err := SplitStoragePassword(tt.spec); err == nil {
				t.Errorf("SplitStoragePassword(%q): no error for SQLite", tt.spec)
			}
			continue
		}
		rest, pw, err := SplitStoragePassword(tt.spec)
		if err != nil || rest != tt.rest || pw != tt.password {
			t.Errorf("SplitStoragePassword(%q) = %q, %q, %v; want %q, %q", tt.spec, rest, pw, err, tt.rest, tt.password)
		}
		if again, err := parseStorage(rest); err != nil || again.driver != "pgx" {
			t.Errorf("the rest %q is no longer PostgreSQL: %v", rest, err)
		}
	}
}

// TestStorageErrorsNeverPrintThePassword: a PostgreSQL server that cannot
// be reached, given as a URL or key=value string, fails with the password
// masked.
func TestStorageErrorsNeverPrintThePassword(t *testing.T) {
	for _, spec := range []string{"host=db password=pw-PLANTED nonsense", "host=db password='pw-PLANTED unclosed"} {
		_, err := parseStorage(spec)
		if err == nil || strings.Contains(err.Error(), "PLANTED") || !strings.Contains(err.Error(), "password=[REDACTED]") {
			t.Errorf("parseStorage(%q) = %v: want a refusal with the password masked", spec, err)
		}
	}
	for _, spec := range []string{
		"postgresql://tune:pw-PLANTED@127.0.0.1:1/tune?connect_timeout=1&sslmode=disable",
		"postgresql://tune@127.0.0.1:1/tune?password=pw-PLANTED&connect_timeout=1&sslmode=disable",
		"host=127.0.0.1 port=1 user=tune password=pw-PLANTED dbname=tune connect_timeout=1 sslmode=disable",
	} {
		_, err := OpenStorage(context.Background(), spec)
		if err == nil {
			t.Fatalf("OpenStorage(%q): no error from a closed port", spec)
		}
		if strings.Contains(err.Error(), "PLANTED") || !strings.Contains(err.Error(), "[REDACTED]") {
			t.Errorf("OpenStorage error %q: want the password masked", err)
		}
		if err := CheckStudyStorage(context.Background(), spec, "s", false); err == nil || strings.Contains(err.Error(), "PLANTED") {
			t.Errorf("CheckStudyStorage error %v", err)
		}
	}
}
