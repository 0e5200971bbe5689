// Package procself is what vigil does to its own process at start, before
// anything else: it makes itself not dumpable, so that its own user's
// other processes (a stdio upstream run unsandboxed, say) cannot read its
// /proc/PID/environ, mem or fd, nor ptrace it, and it writes no core
// dump ([Protect]). Only cmd/vigil imports it.
package procself

import "os"

// Protect makes this process not dumpable and without core dumps, and
// returns its /proc/self/pagemap opened before (nil where there is none):
// a process not run as root can no longer open its own pagemap once it is
// not dumpable, and a file opened before stays readable (see
// exepages.ReleaseFrom).
func Protect() (pagemap *os.File) {
	if f, err := os.Open("/proc/self/pagemap"); err == nil {
		pagemap = f
	}
	undumpable()
	return pagemap
}
