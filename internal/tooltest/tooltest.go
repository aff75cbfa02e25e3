// Package tooltest decides what a test does when a program it drives
// (Chromium for the rendered pages, PostgreSQL for shared tune studies)
// is not installed.
//
// Anywhere else the test skips, so the suite passes in any fresh clone.
// `go test ./...` prints a passing package's output only with -v, so a
// skip is easy to miss: CI sets RequireEnv once it has installed the
// programs, and a test that cannot find one then fails instead of
// skipping, naming what it looked for.
package tooltest

import (
	"os"
	"testing"
)

// RequireEnv turns a missing program into a test failure when set to
// any non-empty value.
const RequireEnv = "SERVEBENCH_REQUIRE_TOOLS"

// Missing ends the test for want of a program: it skips with msg, or
// fails with it when RequireEnv is set. msg names the program and how
// to install it.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("%s (%s is set: this run must have every program the suite drives)", msg, RequireEnv)
	}
	t.Skip(msg)
}
