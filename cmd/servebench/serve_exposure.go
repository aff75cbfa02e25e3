package main

import (
	"fmt"
	"net"

	"github.com/servebench/servebench/serve"
)

// exposureWarning is the warning for a server that other hosts can reach
// with no API key, or "" when there is nothing to warn about.
func exposureWarning(addr net.Addr, apiKey string) string {
	if apiKey != "" || serve.IsLoopback(addr) {
		return ""
	}
	return fmt.Sprintf("Listening on %s without --api-key: anyone who can reach this address can send requests and read /metrics. Pass --api-key KEY, or --host 127.0.0.1 to accept local connections only.", addr)
}
