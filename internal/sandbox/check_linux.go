package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// ErrUnsupported is wrapped by the errors of a kernel or container that
// lacks a mechanism a policy needs.
var ErrUnsupported = errors.New("the sandbox's mechanism is missing")

// Check returns nil when this kernel has what p needs, or an error
// wrapping [ErrUnsupported] that names what is missing. What only a
// start tells (a container that refuses user namespaces to its
// processes) is reported by the start, as [Launch.Wait] or cmd.Start's
// error.
func Check(p Policy) error {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 1 {
		return fmt.Errorf("%w: Landlock (Linux 5.13 or later, with landlock in the kernel's lsm= list): %w", ErrUnsupported, err)
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return fmt.Errorf("%w: user namespaces (user.max_user_namespaces is 0)", ErrUnsupported)
	}
	if os.Getuid() != 0 {
		if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
			return fmt.Errorf("%w: unprivileged user namespaces (kernel.unprivileged_userns_clone is 0)", ErrUnsupported)
		}
	}
	if p.Home != "" {
		st, err := os.Stat(p.Home)
		if err != nil {
			return fmt.Errorf("sandbox: the private directory: %w", err)
		}
		if !st.IsDir() {
			return fmt.Errorf("sandbox: the private directory %s is not a directory", p.Home)
		}
	}
	return nil
}

// Mechanisms names the mechanisms a sandbox on this kernel uses, for the
// live page and the logs.
func Mechanisms() string {
	v, _ := ll.LandlockGetABIVersion()
	return fmt.Sprintf("namespaces (user, pid, mount, ipc, uts, net), landlock v%d, seccomp, no_new_privs, no capabilities, rlimits", v)
}

// StartError explains err, cmd.Start's for a prepared launch: a kernel or
// container that refuses user namespaces says EPERM, EINVAL or ENOSPC.
func StartError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EACCES) {
		return fmt.Errorf("%w: the kernel refused the sandbox's namespaces (user namespaces are off, or the container's seccomp profile refuses them): %w", ErrUnsupported, err)
	}
	return err
}
