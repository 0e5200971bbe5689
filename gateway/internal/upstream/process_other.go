//go:build !unix

package upstream

import "os/exec"

// ownGroup does nothing where process groups are not Unix's.
func ownGroup(*exec.Cmd) {}

// killGroup kills cmd's process only.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

// termGroup does nothing where signals are not Unix's: killGroup follows.
func termGroup(*exec.Cmd) {}
