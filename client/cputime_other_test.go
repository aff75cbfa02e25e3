//go:build !unix

package client

import "time"

func processCPU() time.Duration { return 0 }
