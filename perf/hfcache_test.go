package perf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// writeSnapshot puts config.json of a cached repository under cache.
func writeSnapshot(t *testing.T, cache, id, rev string, config []byte, mtime time.Time) string {
	t.Helper()
	dir := filepath.Join(cache, "models--"+strings.ReplaceAll(id, "/", "--"), "snapshots", rev)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "config.json")
	if err := os.WriteFile(p, config, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeRef(t *testing.T, cache, id, rev string) {
	t.Helper()
	dir := filepath.Join(cache, "models--"+strings.ReplaceAll(id, "/", "--"), "refs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main"), []byte(rev+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHFEnvCacheDirs(t *testing.T) {
	tests := []struct {
		name string
		env  HFEnv
		want []string
	}{
		{"home only", HFEnv{UserHome: "/home/u"}, []string{"/home/u/.cache/huggingface/hub"}},
		{"all", HFEnv{HubCache: "/hc", Home: "/hh", XDGCacheHome: "/x", UserHome: "/home/u"},
			[]string{"/hc", "/hh/hub", "/x/huggingface/hub", "/home/u/.cache/huggingface/hub"}},
		{"duplicates collapse", HFEnv{HubCache: "/home/u/.cache/huggingface/hub/", UserHome: "/home/u"},
			[]string{"/home/u/.cache/huggingface/hub"}},
		{"nothing", HFEnv{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.env.CacheDirs()); diff != "" {
				t.Errorf("CacheDirs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindHFFile(t *testing.T) {
	mixtral, err := os.ReadFile(filepath.Join("testdata", "moe", "Mixtral-8x7B-v0.1", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	old, recent := time.Unix(1_700_000_000, 0), time.Unix(1_750_000_000, 0)
	tests := []struct {
		name  string
		setup func(t *testing.T, cache string) string // returns the wanted path
	}{
		{"refs/main wins over a newer snapshot", func(t *testing.T, cache string) string {
			want := writeSnapshot(t, cache, "mistralai/Mixtral-8x7B-v0.1", "aaa111", mixtral, old)
			writeSnapshot(t, cache, "mistralai/Mixtral-8x7B-v0.1", "bbb222", mixtral, recent)
			writeRef(t, cache, "mistralai/Mixtral-8x7B-v0.1", "aaa111")
			return want
		}},
		{"newest snapshot without refs", func(t *testing.T, cache string) string {
			writeSnapshot(t, cache, "mistralai/Mixtral-8x7B-v0.1", "aaa111", mixtral, old)
			return writeSnapshot(t, cache, "mistralai/Mixtral-8x7B-v0.1", "bbb222", mixtral, recent)
		}},
		{"snapshot files are symlinks into blobs, as huggingface_hub writes them", func(t *testing.T, cache string) string {
			repo := filepath.Join(cache, "models--mistralai--Mixtral-8x7B-v0.1")
			if err := os.MkdirAll(filepath.Join(repo, "blobs"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(repo, "blobs", "e3b0c442"), mixtral, 0o644); err != nil {
				t.Fatal(err)
			}
			snap := filepath.Join(repo, "snapshots", "ddd444")
			if err := os.MkdirAll(snap, 0o755); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(snap, "config.json")
			if err := os.Symlink(filepath.Join("..", "..", "blobs", "e3b0c442"), link); err != nil {
				t.Skipf("no symlinks here: %v", err)
			}
			writeRef(t, cache, "mistralai/Mixtral-8x7B-v0.1", "ddd444")
			return link
		}},
		{"a ref that climbs out is ignored", func(t *testing.T, cache string) string {
			writeRef(t, cache, "mistralai/Mixtral-8x7B-v0.1", "../../../etc")
			return writeSnapshot(t, cache, "mistralai/Mixtral-8x7B-v0.1", "ccc333", mixtral, old)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := t.TempDir()
			want := tt.setup(t, cache)
			got, err := FindHFFile("mistralai/Mixtral-8x7B-v0.1", []string{filepath.Join(cache, "missing"), cache}, "config.json")
			if err != nil || got != want {
				t.Errorf("FindHFFile = %q, %v; want %q", got, err, want)
			}
		})
	}
	for _, id := range []string{"../etc", "a/b/c", "org/..", "noslash", "/abs"} {
		if _, err := FindHFFile(id, []string{t.TempDir()}, "config.json"); err == nil {
			t.Errorf("FindHFFile(%q) accepted a non-id", id)
		}
	}
}

// A model id resolves from the cache to its real config.json (an MoE one
// here), falls back to the catalog, and otherwise names where it looked.
func TestLookupModelInCache(t *testing.T) {
	cache, other := t.TempDir(), t.TempDir()
	config, err := os.ReadFile(filepath.Join("testdata", "moe", "Qwen3-30B-A3B", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeSnapshot(t, cache, "acme/Tiny-MoE", "0123abcd", config, time.Unix(1_700_000_000, 0))
	writeRef(t, cache, "acme/Tiny-MoE", "0123abcd")
	dirs := []string{other, cache}

	m, err := LookupModelInCache("acme/Tiny-MoE", dirs)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "Tiny-MoE" || m.MoE.Experts != 128 || m.MoE.ExpertsPerToken != 8 {
		t.Errorf("cached model = %s with %+v; want Tiny-MoE, 128 experts, top-8", m.Name, m.MoE)
	}
	if m, err := LookupModelInCache("Qwen/Qwen2-7B", dirs); err != nil || m.Name != "Qwen2-7B" {
		t.Errorf("catalog fallback = %s, %v", m.Name, err)
	}
	_, err = LookupModelInCache("acme/Missing-7B", dirs)
	if !errors.Is(err, ErrNotInHFCache) {
		t.Fatalf("error %v does not match ErrNotInHFCache", err)
	}
	for _, want := range []string{
		filepath.Join(other, "models--acme--Missing-7B", "snapshots", "*", "config.json"),
		filepath.Join(cache, "models--acme--Missing-7B", "snapshots", "*", "config.json"),
		"Qwen2-7B", "huggingface-cli download acme/Missing-7B config.json",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// Without cache directories an unknown id is just unknown.
	if _, err := LookupModel("acme/Tiny-MoE"); err == nil || errors.Is(err, ErrNotInHFCache) {
		t.Errorf("LookupModel without a cache: %v", err)
	}
}
