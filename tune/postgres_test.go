package tune

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/tooltest"
	"github.com/servebench/servebench/tune/launch"
)

// startPostgres starts a throwaway PostgreSQL cluster in a temporary
// directory on a loopback port and returns its URL. It skips the test
// only when Debian's PostgreSQL binaries are absent.
func startPostgres(t *testing.T) string {
	t.Helper()
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		if path, err := exec.LookPath("initdb"); err == nil {
			matches = []string{path}
		}
	}
	if len(matches) == 0 {
		tooltest.Missing(t, "PostgreSQL binaries not found (no /usr/lib/postgresql/*/bin/initdb or initdb on PATH); install them with apt-get install -y postgresql")
	}
	bin := filepath.Dir(matches[len(matches)-1])
	// initdb refuses to run as root: run the cluster as the postgres user.
	var asUser []string
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("runuser"); err != nil {
			tooltest.Missing(t, "running as root without runuser: cannot start PostgreSQL as an unprivileged user")
		}
		asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	dir, err := os.MkdirTemp("", "tune-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if len(asUser) > 0 {
		if out, err := exec.Command("chown", "postgres", dir).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v: %s", err, out)
		}
	}
	run := func(name string, args ...string) {
		t.Helper()
		full := append(append(cloneArgs(asUser), filepath.Join(bin, name)), args...)
		if out, err := exec.Command(full[0], full[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(full, " "), err, out)
		}
	}
	data := filepath.Join(dir, "data")
	run("initdb", "-D", data, "-U", "tune", "--auth=trust", "--no-sync")
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "30", "start",
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", port, dir))
	t.Cleanup(func() {
		full := append(cloneArgs(asUser), filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop")
		_ = exec.Command(full[0], full[1:]...).Run()
	})
	return "postgresql://tune@127.0.0.1:" + strconv.Itoa(port) + "/postgres?sslmode=disable"
}

func cloneArgs(s []string) []string { return append([]string(nil), s...) }

func TestTwoWorkersShareOnePostgreSQLStudy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster (about 2 s)")
	}
	testTwoWorkers(t, startPostgres(t))
}
