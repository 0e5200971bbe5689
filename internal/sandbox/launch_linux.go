package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The launcher's descriptors, as [os/exec.Cmd.ExtraFiles] number them.
const (
	fdConfig = 3 // a pipe holding the launch, as JSON
	fdReport = 4 // a SOCK_SEQPACKET socket: the launcher's word, and the proxy's listener
)

// envLaunch marks the launcher's process: [Main] runs it.
const envLaunch = "VIGIL_SANDBOX_LAUNCH"

// maxConfig bounds the launch written to the launcher's pipe, which holds
// it whole before the launcher starts.
const maxConfig = 60 << 10

// launch is what the launcher is told, on fdConfig.
type launch struct {
	Path        string   `json:"path"`
	Argv        []string `json:"argv"`
	Env         []string `json:"env"`
	Dir         string   `json:"dir"`
	Read        []string `json:"read"`
	Write       []string `json:"write"`
	Home        string   `json:"home,omitempty"`
	Namespaces  bool     `json:"namespaces"`
	OwnNetwork  bool     `json:"own_network"`
	Proxy       bool     `json:"proxy"`
	MemoryBytes int64    `json:"memory_bytes"`
	Processes   int      `json:"processes"`
	OpenFiles   int      `json:"open_files"`
	Root        bool     `json:"root"`    // the gateway runs as root
	MapUID      int      `json:"map_uid"` // the ids the launcher maps, itself (a gateway not run as root); 0: mapped already
	MapGID      int      `json:"map_gid"`
}

// Launch is a confined process being started: [Prepare] made it, and
// [Launch.Wait] reads the launcher's word once the command started.
type Launch struct {
	child  []*os.File // the launcher's ends, closed by Started
	report *net.UnixConn
	proxy  bool
}

// Prepare makes cmd (Path, Args, Env, Dir and its standard files set,
// not started) start its program confined by p: cmd runs the calling
// program as the launcher, in namespaces of its own, and the program's
// arguments, environment and directory go to the launcher. cmd must then
// be started, [Launch.Started] called, and [Launch.Wait] waited for.
func Prepare(cmd *exec.Cmd, p Policy) (*Launch, error) {
	if err := Check(p); err != nil {
		return nil, err
	}
	l := &launch{
		Path: cmd.Path, Argv: cmd.Args, Env: cmd.Env, Dir: cmd.Dir, Home: p.Home,
		Namespaces: true, OwnNetwork: p.Network != NetworkHost, Proxy: p.Network == NetworkProxy,
		MemoryBytes: p.MemoryBytes, Processes: p.Processes, OpenFiles: p.OpenFiles,
	}
	if l.Dir == "" {
		l.Dir, _ = os.Getwd()
	}
	l.Read = append(append(SystemPaths(), installPaths(cmd.Path, cmd.Args[1:], l.Dir)...), p.Read...)
	l.Write = append([]string(nil), p.Write...)
	if p.Home != "" {
		l.Write = append(l.Write, p.Home)
		l.Env = setEnv(l.Env, "HOME", p.Home)
		l.Env = setEnv(l.Env, "TMPDIR", p.Home)
	}
	l.Root = os.Getuid() == 0
	if !l.Root {
		// The gateway is not dumpable, nor is its child until it executes
		// the launcher: the gateway cannot write the child's uid_map, so
		// the launcher maps its own ids, as its own user may.
		l.MapUID, l.MapGID = os.Getuid(), os.Getgid()
	}
	data, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfig {
		return nil, fmt.Errorf("sandbox: the command, its environment and paths take %d bytes, over %d", len(data), maxConfig)
	}
	var files []*os.File
	fail := func(err error) (*Launch, error) {
		for _, f := range files {
			_ = f.Close()
		}
		return nil, err
	}
	cr, cw, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	files = append(files, cr)
	_, err = cw.Write(data) // the pipe holds it whole (maxConfig)
	_ = cw.Close()
	if err != nil {
		return fail(err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	theirs := os.NewFile(uintptr(pair[1]), "sandbox-report")
	files = append(files, theirs)
	ours := os.NewFile(uintptr(pair[0]), "sandbox-report")
	conn, err := net.FileConn(ours)
	_ = ours.Close()
	if err != nil {
		return fail(err)
	}
	cmd.Path = "/proc/self/exe"
	cmd.Args = []string{"vigil-sandbox " + filepath.Base(l.Argv[0])}
	cmd.Env = []string{envLaunch + "=1"}
	cmd.Dir = ""
	cmd.ExtraFiles = []*os.File{cr, theirs}
	sys := &syscall.SysProcAttr{
		Setpgid: true,
		// The launcher becomes the program, the first process of its PID
		// namespace: killed when the gateway dies, it takes the whole
		// sandbox with it.
		Pdeathsig:  syscall.SIGKILL,
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS,
		// The launcher keeps, past its exec, what it needs to set up
		// its namespaces; it drops them all before the program runs.
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP},
	}
	if l.OwnNetwork {
		sys.Cloneflags |= syscall.CLONE_NEWNET
	}
	if l.Root {
		// Root in the namespace is root outside, without a capability:
		// root's files are its own by their owner's bits, which Landlock
		// confines to what the policy grants.
		ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
		sys.UidMappings, sys.GidMappings = ids, ids
		sys.AmbientCaps = nil // root of the namespace has them all
	} else {
		sys.AmbientCaps = append(sys.AmbientCaps, unix.CAP_SETUID, unix.CAP_SETGID) // to map its own ids
	}
	cmd.SysProcAttr = sys
	return &Launch{child: files, report: conn.(*net.UnixConn), proxy: l.Proxy}, nil
}

// Started closes the gateway's copies of the launcher's descriptors,
// once cmd.Start returned (whether it failed or not).
func (l *Launch) Started() {
	for _, f := range l.child {
		_ = f.Close()
	}
	l.child = nil
}

// Close ends the launch's report socket; Wait calls it.
func (l *Launch) Close() {
	l.Started()
	_ = l.report.Close()
}

// Wait reads the launcher's word until it executes the program: nil
// once it has, with the listener of the sandbox's proxy when its policy
// has one, or the error the launcher met (the program never ran), or
// ctx's. A launcher that ends without a word was not one: the program
// that started it did not call [Main].
func (l *Launch) Wait(ctx context.Context) (net.Listener, error) {
	defer l.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = l.report.SetReadDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { _ = l.report.SetReadDeadline(time.Now()) })
	defer stop()
	var ln net.Listener
	fail := func(err error) (net.Listener, error) {
		if ln != nil {
			_ = ln.Close()
		}
		return nil, err
	}
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	said := false
	for {
		n, oobn, _, _, err := l.report.ReadMsgUnix(buf, oob)
		if errors.Is(err, io.EOF) {
			n, oobn, err = 0, 0, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return fail(fmt.Errorf("sandbox: the launcher did not finish: %w", context.Cause(ctx)))
			}
			return fail(fmt.Errorf("sandbox: reading the launcher's word: %w", err))
		}
		if n == 0 && oobn == 0 { // end of stream: the program was executed, or the launcher died
			if !said {
				return fail(errors.New("sandbox: the launcher ended without a word: the program that starts sandboxes must call sandbox.Main (gateway.SandboxMain) first in its main"))
			}
			if l.proxy && ln == nil {
				return fail(errors.New("sandbox: the launcher sent no proxy listener"))
			}
			return ln, nil
		}
		msg := string(buf[:n])
		switch {
		case msg == "ready":
			said = true
		case strings.HasPrefix(msg, "error "):
			return fail(errors.New("sandbox: " + strings.TrimPrefix(msg, "error ")))
		case msg == "listener":
			fd, err := passedFD(oob[:oobn])
			if err != nil {
				return fail(err)
			}
			f := os.NewFile(uintptr(fd), "sandbox-proxy")
			ln, err = net.FileListener(f)
			_ = f.Close()
			if err != nil {
				return fail(err)
			}
		default:
			return fail(fmt.Errorf("sandbox: the launcher said %q", msg))
		}
	}
}

// passedFD returns the one descriptor passed in oob.
func passedFD(oob []byte) (int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("sandbox: no descriptor passed: %w", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
		return -1, fmt.Errorf("sandbox: %d descriptors passed: %w", len(fds), err)
	}
	return fds[0], nil
}

// setEnv returns env with k set to v, replacing an entry of k.
func setEnv(env []string, k, v string) []string {
	out := make([]string, 0, len(env)+1)
	for _, e := range env {
		if !strings.HasPrefix(e, k+"=") {
			out = append(out, e)
		}
	}
	return append(out, k+"="+v)
}
