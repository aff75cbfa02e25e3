//go:build unix

package bench

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup keeps a shard process out of the terminal's process
// group, so a Ctrl-C reaches it once, forwarded by the parent, instead of
// twice (terminal and parent), which would count as the second,
// cut-off-now interrupt.
func ownProcessGroup(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
