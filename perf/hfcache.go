package perf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// HFEnv holds the values huggingface_hub derives its cache location from.
// The caller reads them from the environment (libraries do not).
type HFEnv struct {
	HubCache     string // HF_HUB_CACHE (or the older HUGGINGFACE_HUB_CACHE)
	Home         string // HF_HOME
	XDGCacheHome string // XDG_CACHE_HOME
	UserHome     string // the user's home directory
}

// CacheDirs lists the hub cache directories to search, most specific
// first and without duplicates: HF_HUB_CACHE, HF_HOME/hub,
// XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub.
// huggingface_hub itself uses the first of these that is set.
func (e HFEnv) CacheDirs() []string {
	var dirs []string
	add := func(parts ...string) {
		if parts[0] == "" {
			return
		}
		d := filepath.Clean(filepath.Join(parts...))
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	add(e.HubCache)
	add(e.Home, "hub")
	add(e.XDGCacheHome, "huggingface", "hub")
	add(e.UserHome, ".cache", "huggingface", "hub")
	return dirs
}

// ErrNotInHFCache is returned (wrapped) when a Hugging Face id is not in
// any of the cache directories searched.
var ErrNotInHFCache = errors.New("not in the local Hugging Face cache")

// isHFRepoID reports whether s looks like "org/name" and nothing else, so
// that it cannot climb out of the cache directory.
func isHFRepoID(s string) bool {
	org, name, ok := strings.Cut(s, "/")
	if !ok || strings.Contains(name, "/") {
		return false
	}
	for _, part := range []string{org, name} {
		if part == "" || part == "." || part == ".." || strings.ContainsAny(part, `\:`) {
			return false
		}
	}
	return true
}

// FindHFFile returns the path of file (e.g. "config.json",
// "tokenizer.json") in the cached snapshot of the model repository id
// ("Qwen/Qwen2.5-7B-Instruct"): <dir>/models--Qwen--Qwen2.5-7B-Instruct/
// snapshots/<revision>/<file>, with the revision refs/main names, or else
// the most recently modified snapshot that has the file. Nothing is
// downloaded; the error names every path it looked in.
func FindHFFile(id string, dirs []string, file string) (string, error) {
	id = strings.TrimSpace(id)
	if !isHFRepoID(id) {
		return "", fmt.Errorf("perf: %q is not a Hugging Face model id of the form org/name", id)
	}
	repoDir := "models--" + strings.ReplaceAll(id, "/", "--")
	var looked []string
	for _, dir := range dirs {
		snapshots := filepath.Join(dir, repoDir, "snapshots")
		if ref, err := os.ReadFile(filepath.Join(dir, repoDir, "refs", "main")); err == nil {
			rev := strings.TrimSpace(string(ref))
			if rev != "" && !strings.ContainsAny(rev, `/\`) && rev != "." && rev != ".." {
				p := filepath.Join(snapshots, rev, file)
				if isFile(p) {
					return p, nil
				}
			}
		}
		looked = append(looked, filepath.Join(snapshots, "*", file))
		if p, ok := newestSnapshotFile(snapshots, file); ok {
			return p, nil
		}
	}
	return "", &HFCacheMissError{ID: id, File: file, Looked: looked}
}

// HFCacheMissError says which paths were searched for a file of a model
// that is not in the Hugging Face cache; it matches ErrNotInHFCache.
type HFCacheMissError struct {
	ID, File string
	Looked   []string // glob-style paths, one per cache directory
}

func (e *HFCacheMissError) Is(target error) bool { return target == ErrNotInHFCache }

func (e *HFCacheMissError) Error() string {
	return fmt.Sprintf("perf: %s is %s", e.ID, e.detail())
}

func (e *HFCacheMissError) detail() string {
	if len(e.Looked) == 0 {
		return "not in the local Hugging Face cache: no cache directory to search; set HF_HOME or HF_HUB_CACHE"
	}
	return fmt.Sprintf("not in the local Hugging Face cache (looked for %s); nothing is downloaded: fetch it first (huggingface-cli download %s %s) or pass a local path",
		strings.Join(e.Looked, ", "), e.ID, e.File)
}

func isFile(p string) bool {
	info, err := os.Stat(p)
	return err == nil && !info.IsDir()
}

func newestSnapshotFile(snapshots, file string) (string, bool) {
	entries, err := os.ReadDir(snapshots)
	if err != nil {
		return "", false
	}
	var best string
	var bestInfo fs.FileInfo
	for _, e := range entries {
		p := filepath.Join(snapshots, e.Name(), file)
		info, err := os.Stat(p)
		if err != nil || info.IsDir() {
			continue
		}
		if bestInfo == nil || info.ModTime().After(bestInfo.ModTime()) {
			best, bestInfo = p, info
		}
	}
	return best, best != ""
}
