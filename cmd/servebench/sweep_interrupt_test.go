package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMainProcess runs main() with the arguments after "--" when started
// by a test as a subprocess, so signals and exit codes are the real ones.
func TestMainProcess(t *testing.T) {
	if os.Getenv("SERVEBENCH_TEST_MAIN") != "1" {
		t.Skip("helper process for tests that run the CLI as a subprocess")
	}
	dash := slices.Index(os.Args, "--")
	os.Args = append([]string{"servebench"}, os.Args[dash+1:]...)
	main()
}

// TestInterruptedSweepExits130 starts a real sweep process against a
// server that never answers, sends it SIGINT once the first request is
// in flight, and expects exit status 130 with the point left pending for
// --resume. Bounded: the process is killed after 30 s.
func TestInterruptedSweepExits130(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	arrived := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server notice the client hanging up.
		_, _ = io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	defer srv.Close()

	dir := filepath.Join(t.TempDir(), "sweep")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMainProcess$", "--",
		"sweep", "--target", srv.URL, "--dir", dir, "--",
		"--model", "m", "--num-prompts", "1,2", "--random-input-len", "4", "--random-output-len", "1",
		"--skip-tokenizer-init", "--server-metrics-interval", "0", "--interrupt-grace", "100ms")
	cmd.Env = append(os.Environ(), "SERVEBENCH_TEST_MAIN=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-ctx.Done():
		t.Fatalf("no request reached the server; stderr:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("sweep exited with %v, want status 130; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "--resume") {
		t.Errorf("stderr does not say how to finish the sweep:\n%s", stderr.String())
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil || strings.Contains(string(manifest), `"status": "running"`) {
		t.Errorf("manifest after the interrupt (%v):\n%s", err, manifest)
	}
}
