package clock

import "time"

// Sync is what the operating system knows about its wall clock's
// error against its time source (NTP, PTP, chrony), read when a shard
// starts. Shards on different machines share --start-at on their own wall
// clocks, so their real start skew is their lateness plus these offsets,
// within the error bounds.
type Sync struct {
	// Source is where the numbers come from ("adjtimex" on Linux), or
	// "unknown" where the OS offers nothing.
	Source string `json:"source"`
	// Synchronized is false when the kernel says the clock is not
	// disciplined by any time source (then MaxError is meaningless).
	Synchronized bool `json:"synchronized"`
	// Offset is the kernel's remaining correction (the clock is this far
	// behind its source; negative: ahead); MaxError and EstError are its
	// maximum and estimated error bounds.
	Offset   time.Duration `json:"offset_ns"`
	MaxError time.Duration `json:"max_error_ns"`
	EstError time.Duration `json:"est_error_ns"`
}

// ReadSync reads the clock's synchronization state; errors leave
// Source "unknown".
func ReadSync() Sync { return readSync() }
