package clock

import (
	"syscall"
	"time"
)

// Kernel timex status bits (include/uapi/linux/timex.h).
const (
	staUnsync = 0x0040
	staNano   = 0x2000
	timeError = 5 // adjtimex's return for an unsynchronized clock
)

func readSync() Sync {
	var tx syscall.Timex // Modes 0: read only
	state, err := syscall.Adjtimex(&tx)
	if err != nil {
		return Sync{Source: "unknown"}
	}
	offset := time.Duration(int64(tx.Offset)) * time.Microsecond
	if int64(tx.Status)&staNano != 0 {
		offset = time.Duration(int64(tx.Offset))
	}
	return Sync{
		Source:       "adjtimex",
		Synchronized: state != timeError && int64(tx.Status)&staUnsync == 0,
		Offset:       offset,
		MaxError:     time.Duration(int64(tx.Maxerror)) * time.Microsecond,
		EstError:     time.Duration(int64(tx.Esterror)) * time.Microsecond,
	}
}
