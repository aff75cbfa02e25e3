package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodeRecords: any bytes either decode or fail with one line naming
// the file; never a panic.
func FuzzDecodeRecords(f *testing.F) {
	for _, seed := range []string{
		"", "\n\n", `{"index":3,"scheduled_ns":5,"success":true,"itl_ns":[1,2]}` + "\n",
		`{"index":1}` + "\n" + `{"index":`, `[1,2]`, `{"index":"x"}`, "{}\n{}\n", `{"index":1e99}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := DecodeRecords(bytes.NewReader(data), "fuzz.records.jsonl")
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, `"fuzz.records.jsonl"`) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line naming the file", msg)
			}
			return
		}
		if lines := bytes.Count(data, []byte("\n")) + 1; len(recs) > lines {
			t.Fatalf("%d records from %d lines", len(recs), lines)
		}
	})
}

// FuzzLoadShardManifest: any manifest bytes load or fail with one line;
// never a panic, and a loaded manifest names its records beside it.
func FuzzLoadShardManifest(f *testing.F) {
	f.Add([]byte(`{"format":"servebench-shard/1","records":"r.records.jsonl","shard":0,"shards":1}`))
	f.Add([]byte(`{"format":"servebench-shard/1","records":"../x.jsonl"}`))
	f.Add([]byte(`{"format":"servebench-shard/1","records":"/etc/passwd"}`))
	f.Add([]byte(`{"format":"servebench-shard/1","records":"r.records.jsonl","run":{"request_rate":"+Inf"},"started":"bad"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "r.records.jsonl"), []byte(`{"index":0,"success":true}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "m.shard.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		shards, err := LoadShards(path)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q spans lines", err)
			}
			return
		}
		if len(shards) != 1 || filepath.Dir(shards[0].RecordsPath) != dir {
			t.Fatalf("loaded %+v: records must sit beside the manifest", shards)
		}
		_, _ = MergeShards(shards) // must not panic on any accepted manifest
	})
}
