package bench

import (
	"runtime"
	"testing"
)

func TestReadClockSyncNamesItsSource(t *testing.T) {
	c := ReadClockSync()
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
