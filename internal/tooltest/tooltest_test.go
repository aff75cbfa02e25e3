package tooltest

import (
	"os"
	"os/exec"
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
