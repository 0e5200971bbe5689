package sandbox

import (
	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls are the system calls a confined process is refused
// (EPERM): reaching into other processes (ptrace, process_vm_*,
// pidfd_getfd, kcmp), the kernel's keyrings, BPF, mounts and namespaces,
// modules, kexec, io_uring (whose operations seccomp does not see),
// userfaultfd and perf events (kernel exploits' staples), and the
// machine's clock, swap, reboot and accounting.
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
	"unshare", "setns",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"open_by_handle_at", "name_to_handle_at",
	"swapon", "swapoff", "reboot", "acct", "quotactl", "quotactl_fd", "syslog", "vhangup",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"iopl", "ioperm",
}

// namespaceFlags are clone's flags that make namespaces: refused too.
const namespaceFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// loadSeccomp installs the filter on the calling thread, which executes
// the program: it and every process it starts keep it.
func loadSeccomp() error {
	return seccomp.LoadFilter(seccomp.Filter{
		NoNewPrivs: true,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls: []seccomp.SyscallGroup{
				{Action: seccomp.ActionErrno, Names: deniedSyscalls},
				{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{{
					Name:       "clone",
					Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.BitsSet, Value: namespaceFlags}},
				}}},
				// clone3's flags are in memory a filter cannot read: ENOSYS
				// makes the C libraries fall back to clone.
				{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
			},
		},
	})
}
