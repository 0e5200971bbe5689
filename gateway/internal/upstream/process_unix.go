//go:build unix

package upstream

import (
	"os/exec"
	"syscall"
)

// ownGroup makes cmd the leader of a process group of its own.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills cmd's process group: the process and the children it
// started (npx starts node, for one).
func killGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// termGroup asks cmd's process group to end (SIGTERM).
func termGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
