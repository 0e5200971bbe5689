package procself

import "golang.org/x/sys/unix"

// undumpable makes this process not dumpable and sets its core size to 0.
func undumpable() {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
}
