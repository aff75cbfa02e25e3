package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/servebench/servebench/tune"
)

func TestK8sCommandsPrintManifests(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		jobDoc      int // index of the Job to check
		parallelism int32
		indexed     bool
	}{
		{"bench", []string{"k8s", "bench", "--shards", "16", "--start-at", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "--", "--base-url", "http://vllm:8000", "--request-rate", "2000"}, 2, 16, true},
		{"tune", []string{"k8s", "tune", "--workers", "8", "--storage", "postgresql://tune@pg/tune", "--", "--trials", "64"}, 1, 8, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runCLI(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			docs := bytes.Split([]byte(out), []byte("\n---\n"))
			var job batchv1.Job
			if err := yaml.UnmarshalStrict(docs[tt.jobDoc], &job); err != nil {
				t.Fatalf("document %d: %v", tt.jobDoc, err)
			}
			indexed := job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
			if job.Kind != "Job" || *job.Spec.Parallelism != tt.parallelism || indexed != tt.indexed {
				t.Errorf("%s parallelism %d indexed %v; want Job, %d, %v", job.Kind, *job.Spec.Parallelism, indexed, tt.parallelism, tt.indexed)
			}
		})
	}
}

func TestK8sAndWorkerFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad start", []string{"k8s", "bench", "--start-at", "tomorrow"}, `--start-at "tomorrow"`},
		{"sqlite for pods", []string{"k8s", "tune", "--storage", "study.db"}, "PostgreSQL"},
		{"worker without storage", []string{"tune", "--worker", "--", "--model", "Qwen/Qwen2-0.5B"}, "--worker: give the shared study's --storage"},
		{"slots without worker", []string{"tune", "--concurrent-trials", "2", "--", "--model", "Qwen/Qwen2-0.5B"}, "need --worker"},
		{"GPUs for sim", []string{"tune", "--worker", "--storage", "x.db", "--gpus-per-trial", "1", "--", "--model", "Qwen/Qwen2-0.5B"}, "only --launch servers run on GPUs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runCLI(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// A --worker with two concurrent trials on sim shares the budget between
// its two slots, each a worker of its own in the study.
func TestTuneWorkerRunsConcurrentTrials(t *testing.T) {
	dir := t.TempDir()
	storage := filepath.Join(dir, "study.db")
	_, stderr, err := runCLI(t, "tune", "--worker", "--storage", storage, "--concurrent-trials", "2", "--trials", "4", "--dir", dir,
		"--", "--model", "Qwen/Qwen2-0.5B", "--gpu", "H100", "--num-prompts", "10", "--request-rate", "10")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	store, err := tune.OpenStorage(context.Background(), storage)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	trials, err := store.Trials(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	workers := map[string]bool{}
	for _, tr := range trials {
		if tr.State != tune.StateComplete || tr.Attempts != 1 {
			t.Errorf("trial %d: %s after %d attempts", tr.Number, tr.State, tr.Attempts)
		}
		workers[tr.Worker] = true
	}
	if len(trials) != 4 || len(workers) != 2 {
		t.Errorf("%d trials by %d workers; want 4 by the 2 slots", len(trials), len(workers))
	}
}

// TestK8sBenchPodsRunTheirSpec runs what a shard pod runs: the spec
// printed in the ConfigMap, through bench --spec, as shard 0 of 1 from
// the Job's environment, starting at the manifests' --start-at.
func TestK8sBenchPodsRunTheirSpec(t *testing.T) {
	srv, calls := sseServer(t, 2, 0)
	startAt := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	out, _, err := runCLI(t, "k8s", "bench", "--shards", "1", "--start-at", startAt, "--", "--base-url", srv.URL, "--model", "m",
		"--num-prompts", "3", "--random-input-len", "4", "--random-output-len", "2", "--skip-tokenizer-init", "--server-metrics-interval", "0",
		"--skip-test-request", "--header", "X-Run: it's 1")
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	for _, doc := range bytes.Split([]byte(out), []byte("\n---\n")) {
		if bytes.Contains(doc, []byte("kind: ConfigMap")) {
			if err := yaml.UnmarshalStrict(doc, &cm); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := t.TempDir()
	specFile := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(specFile, []byte(cm.Data["spec.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SERVEBENCH_SHARDS", cm.Data["shards"])
	t.Setenv("JOB_COMPLETION_INDEX", "0")
	records := filepath.Join(dir, "records")
	if _, stderr, err := runCLI(t, "bench", "--spec", specFile, "--start-at", cm.Data["start-at"], "--result-dir", records, "--disable-tqdm"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if calls.Load() != 3 {
		t.Errorf("the pod's bench sent %d requests, want the spec's 3", calls.Load())
	}
	if _, err := os.Stat(filepath.Join(records, "shard-0-of-1.shard.json")); err != nil {
		t.Errorf("no shard manifest: %v", err)
	}
	if _, _, err := runCLI(t, "sim", "--spec", specFile); err == nil || !strings.Contains(err.Error(), "is a bench run; use servebench bench --spec") {
		t.Errorf("a bench spec given to sim: %v", err)
	}
}

// TestK8sCredentialsReachThePodsOnlyThroughTheSecret: k8s bench with a
// bearer header prints manifests without it (every byte searched), writes
// the Secret to --secret-file for its owner alone, and a pod given that
// Secret's keys as its environment sends the real header.
func TestK8sCredentialsReachThePodsOnlyThroughTheSecret(t *testing.T) {
	const token = "Bearer tok-PLANTED-k8s"
	var seen atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"choices\":[{\"text\":\"x\"}]}\n\ndata: [DONE]\n\n"))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "creds.yaml")
	startAt := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	benchFlags := []string{"--", "--base-url", srv.URL, "--model", "m", "--num-prompts", "2", "--random-input-len", "4", "--random-output-len", "1",
		"--skip-tokenizer-init", "--server-metrics-interval", "0", "--skip-test-request", "--header", "Authorization: " + token}

	// Without a place for the Secret, nothing is printed.
	out, _, err := runCLI(t, append([]string{"k8s", "bench", "--shards", "1", "--start-at", startAt}, benchFlags...)...)
	if err == nil || !strings.Contains(err.Error(), "--secret-file") || out != "" || strings.Contains(err.Error(), "PLANTED") {
		t.Fatalf("no --secret-file: err %v, printed %d bytes", err, len(out))
	}
	out, stderr, err := runCLI(t, append([]string{"k8s", "bench", "--shards", "1", "--start-at", startAt, "--secret-file", secretFile}, benchFlags...)...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out+stderr, "PLANTED") {
		t.Fatalf("the printed manifests or messages hold the token:\n%s\n%s", out, stderr)
	}
	st, err := os.Stat(secretFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("--secret-file: %v, mode %v; want 0600", err, st.Mode())
	}
	raw, _ := os.ReadFile(secretFile)
	var secret corev1.Secret
	if err := yaml.UnmarshalStrict(raw, &secret); err != nil || secret.Kind != "Secret" {
		t.Fatalf("secret file: %v %s", err, secret.Kind)
	}
	var cm corev1.ConfigMap
	var job batchv1.Job
	for _, doc := range bytes.Split([]byte(out), []byte("\n---\n")) {
		switch {
		case bytes.Contains(doc, []byte("kind: ConfigMap")):
			if err := yaml.UnmarshalStrict(doc, &cm); err != nil {
				t.Fatal(err)
			}
		case bytes.Contains(doc, []byte("completionMode: Indexed")):
			if err := yaml.UnmarshalStrict(doc, &job); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The pod: its environment from the Job, secretKeyRefs resolved.
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		switch {
		case e.ValueFrom == nil:
			t.Setenv(e.Name, e.Value)
		case e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == secret.Name:
			if v, ok := secret.StringData[e.ValueFrom.SecretKeyRef.Key]; ok {
				t.Setenv(e.Name, v)
			}
		}
	}
	t.Setenv("JOB_COMPLETION_INDEX", "0")
	specFile := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(specFile, []byte(cm.Data["spec.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err = runCLI(t, "bench", "--spec", specFile, "--start-at", cm.Data["start-at"], "--result-dir", filepath.Join(dir, "records"), "--disable-tqdm")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if got, _ := seen.Load().(string); got != token {
		t.Errorf("the pod sent Authorization %q, want the Secret's token", got)
	}
}

// TestK8sTunePrintsNoStoragePassword: the PostgreSQL password, in any of
// its spellings, stays out of the printed workers' manifests.
func TestK8sTunePrintsNoStoragePassword(t *testing.T) {
	for _, storage := range []string{
		"postgresql://tune:pw-PLANTED@pg/tune",
		"postgresql://tune@pg/tune?password=pw-PLANTED",
		"host=pg user=tune password=pw-PLANTED dbname=tune",
	} {
		secretFile := filepath.Join(t.TempDir(), "creds.yaml")
		out, stderr, err := runCLI(t, "k8s", "tune", "--workers", "2", "--storage", storage, "--secret-file", secretFile, "--", "--trials", "4")
		if err != nil {
			t.Fatalf("%s: %v", storage, err)
		}
		if strings.Contains(out+stderr, "PLANTED") || !strings.Contains(out, "PGPASSWORD") {
			t.Errorf("%s: the manifests hold the password, or do not read it from the Secret:\n%s", storage, out)
		}
		if raw, _ := os.ReadFile(secretFile); !strings.Contains(string(raw), "pgpassword: pw-PLANTED") {
			t.Errorf("%s: secret file %s", storage, raw)
		}
	}
}
