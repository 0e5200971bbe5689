//go:build !unix

package upstream

import "os/exec"

// ownGroup does nothing where process groups are not Unix's.
func ownGroup(*exec.Cmd) {}

// killGroup kills cmd's process only.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
