package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// Main runs the sandbox's launcher when this process is one, and never
// returns then; elsewhere it returns at once. A program that starts
// sandboxed processes ([Prepare]) calls it first in its main, before it
// does anything else: the launcher is that program, started again.
func Main() {
	if os.Getenv(envLaunch) == "" {
		return
	}
	// Every step that is the thread's own (capabilities, the seccomp
	// filter) is taken on this thread, which executes the program.
	runtime.LockOSThread()
	report := os.NewFile(fdReport, "sandbox-report")
	err := runLauncher(report)
	// runLauncher returns only on failure: the program was not executed.
	say(report, nil, "error "+err.Error())
	os.Exit(127)
}

// runLauncher confines this process as its launch says and executes the
// program; it returns only the error that kept it from doing so.
func runLauncher(report *os.File) error {
	cfg := os.NewFile(fdConfig, "sandbox-config")
	data, err := io.ReadAll(io.LimitReader(cfg, maxConfig+1))
	_ = cfg.Close()
	if err != nil {
		return fmt.Errorf("reading the launch: %w", err)
	}
	var l launch
	if err := json.Unmarshal(data, &l); err != nil || len(l.Argv) == 0 {
		return fmt.Errorf("a launch that does not parse (%w)", err)
	}
	if l.MapUID != 0 {
		if err := mapOwnIDs(l.MapUID, l.MapGID); err != nil {
			return fmt.Errorf("mapping the sandbox's user: %w", err)
		}
	}
	if l.Namespaces {
		// The mounts of a new mount namespace are copies whose events may
		// propagate back: make them private before mounting anything.
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("making the sandbox's mounts private: %w", err)
		}
		// /proc of the sandbox's own PID namespace: no other process shows.
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mounting the sandbox's /proc (a container that masks /proc refuses it; allow it, or run the upstream unsandboxed): %w", err)
		}
		if l.Processes > 0 {
			if err := boundPIDs(l.Processes); err != nil && l.Root {
				// RLIMIT_NPROC does not count root's processes: the PID
				// namespace's bound is the only one.
				return fmt.Errorf("bounding a root gateway's sandbox to %d processes needs a PID namespace's own pid_max (Linux 6.14 or later): %w; or leave it unbounded (processes=-1)", l.Processes, err)
			}
		}
	}
	env := l.Env
	if l.OwnNetwork {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bringing up the sandbox's loopback: %w", err)
		}
	}
	if l.Proxy {
		port, err := sendProxyListener(report)
		if err != nil {
			return fmt.Errorf("the sandbox's proxy listener: %w", err)
		}
		u := "http://127.0.0.1:" + strconv.Itoa(port)
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy", "npm_config_https_proxy"} {
			env = setEnv(env, k, u)
		}
		env = setEnv(env, "NODE_USE_ENV_PROXY", "1")
	}
	if err := unix.Chdir(l.Dir); err != nil {
		return fmt.Errorf("the directory %s: %w", l.Dir, err)
	}
	if err := setLimits(l); err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	roDirs, roFiles := splitFiles(l.Read)
	rwDirs, rwFiles := splitFiles(l.Write)
	rules := []landlock.Rule{
		landlock.RODirs(roDirs...), landlock.ROFiles(roFiles...),
		landlock.RWDirs(rwDirs...).WithRefer(), landlock.RWFiles(append(rwFiles, devices...)...).IgnoreIfMissing(),
	}
	// Every access right of the newest ABI this package knows, those of
	// the kernel's; RestrictPaths sets no_new_privs on every thread.
	if err := landlock.V7.BestEffort().RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if err := loadSeccomp(); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	// Nothing of the launcher's reaches the program but its standard
	// files.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("close_range: %w", err)
	}
	say(report, nil, "ready")
	return execve(l.Path, l.Argv, env)
}

// splitFiles returns the directories and the other files of paths, each
// once, leaving out those that do not exist.
func splitFiles(paths []string) (dirs, files []string) {
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		switch st, err := os.Stat(p); {
		case err != nil:
		case st.IsDir():
			dirs = append(dirs, p)
		default:
			files = append(files, p)
		}
	}
	return dirs, files
}

// mapOwnIDs maps the launcher's user and group namespace to its own user
// and group outside, one id each, as an unprivileged user may (setgroups
// denied first).
func mapOwnIDs(uid, gid int) error {
	for _, w := range []struct{ file, data string }{
		{"/proc/self/setgroups", "deny"},
		{"/proc/self/uid_map", fmt.Sprintf("%d %d 1", uid, uid)},
		{"/proc/self/gid_map", fmt.Sprintf("%d %d 1", gid, gid)},
	} {
		if err := os.WriteFile(w.file, []byte(w.data), 0); err != nil {
			return err
		}
	}
	return nil
}

// boundPIDs bounds the sandbox's PID namespace to about n processes and
// threads: its pid_max, at least 301 (the kernel's least), is one more.
func boundPIDs(n int) error {
	return os.WriteFile("/proc/sys/kernel/pid_max", []byte(strconv.Itoa(max(n+1, 301))), 0)
}

// say sends msg, with the descriptors of rights, on the report socket.
func say(report *os.File, rights []byte, msg string) {
	_ = unix.Sendmsg(int(report.Fd()), []byte(msg), rights, nil, 0)
}

// sendProxyListener listens on the sandbox's loopback and passes the
// listener to the gateway, which serves it; it returns the port.
func sendProxyListener(report *os.File) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer func() { _ = unix.Close(fd) }()
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return 0, err
	}
	if err := unix.Listen(fd, 128); err != nil {
		return 0, err
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return 0, err
	}
	in, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		return 0, fmt.Errorf("an address of %T", sa)
	}
	say(report, unix.UnixRights(fd), "listener")
	return in.Port, nil
}

// loopbackUp sets the sandbox's loopback interface up.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	req, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, req); err != nil {
		return err
	}
	req.SetUint16(req.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, req)
}

// setLimits sets the launch's resource limits, and no core dump.
func setLimits(l launch) error {
	set := func(what string, res int, n uint64) error {
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			return fmt.Errorf("limiting %s to %d: %w", what, n, err)
		}
		return nil
	}
	if err := set("core dumps", unix.RLIMIT_CORE, 0); err != nil {
		return err
	}
	if l.MemoryBytes > 0 {
		if err := set("memory", unix.RLIMIT_DATA, uint64(l.MemoryBytes)); err != nil {
			return err
		}
	}
	if l.Processes > 0 {
		if err := set("processes", unix.RLIMIT_NPROC, uint64(l.Processes)); err != nil {
			return err
		}
	}
	if l.OpenFiles > 0 {
		if err := set("open files", unix.RLIMIT_NOFILE, uint64(l.OpenFiles)); err != nil {
			return err
		}
	}
	return nil
}

// dropCapabilities leaves this thread, and what it executes, without any
// capability for good: the bounding and ambient sets emptied, the
// securebits that would give a root of the namespace capabilities at
// exec locked off, and its own sets cleared.
func dropCapabilities() error {
	// linux/securebits.h: NOROOT, NO_SETUID_FIXUP, KEEP_CAPS (off) and
	// NO_CAP_AMBIENT_RAISE, each with its lock.
	const (
		noRoot, noRootLocked               = 1 << 0, 1 << 1
		noSetuidFixup, noSetuidFixupLocked = 1 << 2, 1 << 3
		keepCapsLocked                     = 1 << 5
		noAmbientRaise, noAmbientLocked    = 1 << 6, 1 << 7
		bits                               = noRoot | noRootLocked | noSetuidFixup | noSetuidFixupLocked | keepCapsLocked | noAmbientRaise | noAmbientLocked
	)
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("dropping capability %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clearing capabilities: %w", err)
	}
	return nil
}

// execve executes the program at path on the calling thread (the
// launcher's own, so its filter and capabilities are the program's).
func execve(path string, argv, env []string) error {
	err := unix.Exec(path, argv, env)
	return fmt.Errorf("executing %s: %w", path, err)
}
