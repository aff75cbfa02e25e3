// Package tooltest decides what a test does when a program it drives
// (Chromium for the rendered pages, PostgreSQL for shared tune studies)
// is not installed, and runs such a program (Run) so that a crash of the
// program itself is not taken for the test's failure.
//
// Anywhere else the test skips, so the suite passes in any fresh clone.
// `go test ./...` prints a passing package's output only with -v, so a
// skip is easy to miss: CI sets RequireEnv once it has installed the
// programs, and a test that cannot find one then fails instead of
// skipping, naming what it looked for.
package tooltest

import (
	"context"
	"errors"
	"os"
	"os/exec"
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

// Run runs a program a test drives and returns its standard output (with
// combined, its standard error too). When the program dies of a signal it
// runs again, up to three times in all, with args(attempt) for a fresh
// profile directory: headless Chromium sometimes segfaults under load on
// small CI machines before loading anything, which says nothing about the
// page. A run that exits with a status is not repeated.
func Run(ctx context.Context, program string, combined bool, args func(attempt int) []string) ([]byte, error) {
	var out []byte
	var err error
	for attempt := range 3 {
		cmd := exec.CommandContext(ctx, program, args(attempt)...)
		if combined {
			out, err = cmd.CombinedOutput()
		} else {
			out, err = cmd.Output()
		}
		var exit *exec.ExitError
		// ExitCode is -1 for a process a signal ended.
		if !errors.As(err, &exit) || exit.ExitCode() != -1 || ctx.Err() != nil {
			return out, err
		}
	}
	return out, err
}
