package validate

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/runspec"
)

// TestCheckParallelSizes: server flags that contradict a run's own
// parallel sizes, and GPUs beyond one replica, make the run unsimulable.
func TestCheckParallelSizes(t *testing.T) {
	for _, c := range []struct {
		name       string
		tp, pp, n  int
		serverArgs []string
		want       string // "" for no error
	}{
		{"agreeing flags", 2, 1, 2, []string{"-tp", "2"}, ""},
		{"no flags", 4, 2, 8, nil, ""},
		{"tensor parallel disagrees", 2, 1, 2, []string{"--tensor-parallel-size", "4"}, "--tensor-parallel-size 4 disagrees with the run's own 2"},
		{"pipeline parallel disagrees", 1, 2, 2, []string{"--pipeline-parallel-size", "1"}, "--pipeline-parallel-size 1 disagrees with the run's own 2"},
		{"data-parallel replicas", 2, 1, 4, nil, "data-parallel replicas are not simulated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			server, err := runspec.ParseServerArgs(c.serverArgs)
			if err != nil {
				t.Fatal(err)
			}
			err = checkParallelSizes(&Run{TensorParallel: c.tp, PipelineParallel: c.pp, GPUCount: c.n}, server)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}
