package main

import "golang.org/x/sys/unix"

// undumpable makes this process not dumpable, so that its own user's
// other processes (a stdio upstream run unsandboxed, say) cannot read its
// /proc/PID/environ, mem or fd, nor ptrace it, and it writes no core dump
// (docs/security.md, "Upstreams are strangers").
func undumpable() {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
}
