package main

import (
	"bytes"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestSweepNeverWritesCredentials runs a real bench sweep against a local
// server with credentials in headers, metadata and the environment, then
// reads back every file the sweep wrote, and its terminal output, looking
// for them.
func TestSweepNeverWritesCredentials(t *testing.T) {
	const planted = "PLANTED"
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost { // bench's GET /v1/models vocabulary probe is not a measured request
			mu.Lock()
			seen = append(seen, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Api-Key"))
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"choices\":[{\"text\":\"hi\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"))
	}))
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "sk-env-"+planted)

	benchArgs := []string{"--model", "m", "--random-input-len", "4", "--random-output-len", "1",
		"--skip-tokenizer-init", "--server-metrics-interval", "0", "--skip-test-request", "--num-prompts", "2,3"}
	tests := []struct {
		name    string
		headers []string
		wantErr bool
		// wantSeen is what the server must receive, when the run succeeds.
		wantSeen string
	}{
		{"equals form", []string{"--header", "Authorization=Bearer sk-" + planted + "-1", "--header=X-Api-Key=key-" + planted + "-2"},
			false, "Bearer sk-" + planted + "-1|key-" + planted + "-2"},
		{"colon form", []string{"--header", "Authorization: Bearer sk-" + planted + "-1", "--header", "X-Api-Key: key-" + planted + "-2"},
			false, "Bearer sk-" + planted + "-1|key-" + planted + "-2"},
		{"malformed header fails without printing it", []string{"--header", "sk-" + planted + "-only"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			dir := filepath.Join(t.TempDir(), "sweep")
			args := append([]string{"--target", srv.URL, "--dir", dir, "--", "--metadata", "token=meta-" + planted}, benchArgs...)
			args = append(args, tt.headers...)
			stdout, stderr, err := executeForTest(t, newSweepCmd(), t.Context(), args...)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v\nstderr: %s", err, tt.wantErr, stderr)
			}
			if err != nil && strings.Contains(err.Error(), planted) {
				t.Errorf("error shows the secret: %v", err)
			}
			if tt.wantSeen != "" {
				mu.Lock()
				ok := len(seen) == 5 && !slices.ContainsFunc(seen, func(s string) bool { return s != tt.wantSeen })
				mu.Unlock()
				if !ok {
					t.Fatalf("server saw %q, want 5 requests with %q", seen, tt.wantSeen)
				}
			}
			for name, out := range map[string]string{"stdout": stdout, "stderr": stderr} {
				if strings.Contains(out, planted) {
					t.Errorf("%s shows a secret:\n%s", name, out)
				}
			}
			if tt.wantErr {
				// The header is refused before the sweep writes anything.
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("a refused sweep left %s (%v)", dir, err)
				}
				return
			}
			files, logs := 0, 0
			err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				files++
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				if i := bytes.Index(data, []byte(planted)); i >= 0 {
					t.Errorf("%s holds a secret: %q", path, data[max(i-40, 0):min(i+20, len(data))])
				}
				if d.Name() == "output.log" {
					logs++
					info, err := d.Info()
					if err != nil {
						return err
					}
					if perm := info.Mode().Perm(); perm != 0o600 {
						t.Errorf("%s has mode %o, want 600", path, perm)
					}
					if !bytes.Contains(data, []byte("[REDACTED]")) {
						t.Errorf("%s does not show where the secret was masked:\n%s", path, data)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if logs != 2 || files < 3 {
				t.Errorf("sweep wrote %d files with %d logs, want a manifest, results and 2 logs", files, logs)
			}
		})
	}
}
