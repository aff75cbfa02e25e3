package bench

import "github.com/servebench/servebench/internal/clock"

// ClockSync is what the operating system knows about its wall clock's
// error against its time source, read when a shard starts.
type ClockSync = clock.Sync

// ReadClockSync reads the clock's synchronization state; errors leave
// Source "unknown".
func ReadClockSync() ClockSync { return clock.ReadSync() }
