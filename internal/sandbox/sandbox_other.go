//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"runtime"
)

// ErrUnsupported is wrapped by the errors of a system that lacks a
// mechanism a policy needs: every one but Linux.
var ErrUnsupported = errors.New("the sandbox's mechanism is missing")

// Check returns an error: sandboxes are built on Linux only.
func Check(Policy) error {
	return fmt.Errorf("%w: sandboxes need Linux (this is %s)", ErrUnsupported, runtime.GOOS)
}

// Mechanisms names none.
func Mechanisms() string { return "none (not Linux)" }

// StartError returns err.
func StartError(err error) error { return err }

// Launch is never made off Linux.
type Launch struct{}

// Prepare returns Check's error.
func Prepare(*exec.Cmd, Policy) (*Launch, error) { return nil, Check(Policy{}) }

// Started does nothing.
func (*Launch) Started() {}

// Close does nothing.
func (*Launch) Close() {}

// Wait returns Check's error.
func (*Launch) Wait(context.Context) (net.Listener, error) { return nil, Check(Policy{}) }

// Main returns at once.
func Main() {}
