package workload

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBuildCompactMatchesBuild: the compact workload is Build's with the
// IDs moved into the source, and the source rebuilds exactly Build's IDs.
func TestBuildCompactMatchesBuild(t *testing.T) {
	for name, spec := range map[string]Spec{
		"fixed lengths":    randomSpec(300, 64, 16, 0, 0),
		"range and prefix": randomSpec(500, 200, 200, 0.5, 37),
		"prefix only, small vocab": func() Spec {
			s := randomSpec(50, 1, 4, 0, 20)
			s.VocabSize = 7
			return s
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			want, err := Build(ctx, spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, source, err := BuildCompact(ctx, spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			if source == nil {
				t.Fatal("no PromptSource for a random workload without a tokenizer")
			}
			if len(got) != len(want) {
				t.Fatalf("%d requests, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i].PromptIDs != nil {
					t.Fatalf("request %d keeps its IDs", i)
				}
				if ids := source(&got[i]); !slices.Equal(ids, want[i].PromptIDs) {
					t.Fatalf("request %d: source gives %v, Build %v", i, ids, want[i].PromptIDs)
				}
				got[i].PromptIDs = want[i].PromptIDs
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("requests differ beyond the IDs (-Build +BuildCompact):\n%s", diff)
			}
		})
	}
}

// TestBuildCompactOtherDatasets: datasets without a compact form come back
// as Build makes them, with no source.
func TestBuildCompactOtherDatasets(t *testing.T) {
	spec := sonnetSpec("testdata/poem.txt", 5, 200, 10, 80)
	want, err := Build(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, source, err := BuildCompact(context.Background(), spec, nil)
	if err != nil || source != nil {
		t.Fatalf("source %v, error %v; want none", source != nil, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-Build +BuildCompact):\n%s", diff)
	}
}
