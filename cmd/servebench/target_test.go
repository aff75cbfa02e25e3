package main

import (
	"os"
	"testing"
)

// TestMain points bench's default-target probe at port 0, where nothing
// can listen, so no test depends on what runs on this machine's port 8000.
func TestMain(m *testing.M) {
	defaultTargetAddr = "127.0.0.1:0"
	os.Exit(m.Run())
}
