package tooltest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestMissing runs itself as a subprocess with and without RequireEnv:
// the missing program skips the test, or fails it.
func TestMissing(t *testing.T) {
	if os.Getenv("TOOLTEST_CHILD") != "" {
		Missing(t, "frobnicator not found (apt-get install frobnicator)")
		return
	}
	for _, tt := range []struct {
		require  string
		wantFail bool
		want     string
	}{
		{"", false, "--- SKIP: TestMissing"},
		{"1", true, "--- FAIL: TestMissing"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissing$", "-test.v")
		cmd.Env = append(os.Environ(), "TOOLTEST_CHILD=1", RequireEnv+"="+tt.require)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tt.wantFail || !strings.Contains(string(out), tt.want) || !strings.Contains(string(out), "frobnicator not found") {
			t.Errorf("%s=%q: err %v, output:\n%s\nwant %q", RequireEnv, tt.require, err, out, tt.want)
		}
	}
}

// TestRun repeats a program a signal killed, with each attempt's
// arguments, and never one that exited with a status.
func TestRun(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		Missing(t, "sh not found")
	}
	cases := []struct {
		name     string
		script   string // attempt N runs it with $1 = N
		combined bool
		wantOut  string
		wantRuns int
		wantErr  bool
	}{
		{"crashes twice, then works", `echo $1 >> "$2"; [ "$1" -ge 2 ] || kill -SEGV $$; echo page $1`, false, "page 2\n", 3, false},
		{"crashes every time", `echo $1 >> "$2"; kill -SEGV $$`, false, "", 3, true},
		{"fails with a status", `echo $1 >> "$2"; echo broken >&2; exit 3`, true, "broken\n", 1, true},
		{"works at once", `echo $1 >> "$2"; echo ok`, false, "ok\n", 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := t.TempDir() + "/runs"
			out, err := Run(t.Context(), sh, c.combined, func(attempt int) []string {
				return []string{"-c", c.script, "sh", strconv.Itoa(attempt), log}
			})
			if (err != nil) != c.wantErr || string(out) != c.wantOut {
				t.Errorf("output %q, error %v; want %q, error %v", out, err, c.wantOut, c.wantErr)
			}
			runs, _ := os.ReadFile(log)
			if n := strings.Count(string(runs), "\n"); n != c.wantRuns {
				t.Errorf("ran %d times (%q), want %d", n, runs, c.wantRuns)
			}
		})
	}
}
