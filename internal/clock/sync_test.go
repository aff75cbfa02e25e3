package clock

import (
	"runtime"
	"testing"
)

func TestReadSyncNamesItsSource(t *testing.T) {
	c := ReadSync()
	want := "unknown"
	if runtime.GOOS == "linux" {
		want = "adjtimex"
	}
	if c.Source != want {
		t.Fatalf("source %q on %s, want %q", c.Source, runtime.GOOS, want)
	}
	if c.MaxError < 0 || c.EstError < 0 {
		t.Fatalf("negative error bounds %+v", c)
	}
}
