package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/vigil-mcp/vigil/internal/egress"
	"github.com/vigil-mcp/vigil/internal/sandbox"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// The defaults of [ProcessConfig]'s bounds.
const (
	defaultMaxStderrLine = 4 << 10
	defaultKillGrace     = 2 * time.Second
	defaultStderrRate    = 100 // lines a second
	defaultStderrBurst   = 200 // lines at once
	defaultSandboxStart  = 30 * time.Second
)

// inheritedEnv are the variables of the gateway's own environment that a
// stdio upstream inherits: what finding and running a program needs, and
// nothing the gateway holds for itself (its keys and passwords).
var inheritedEnv = []string{"PATH", "HOME", "LANG", "TMPDIR", "SYSTEMROOT"}

// ProcessConfig configures a stdio upstream's process.
type ProcessConfig struct {
	// Name names the upstream in logs.
	Name string
	// Argv is the program and its arguments (see cmdline.Split); the
	// program is looked up in PATH when it has no slash. No shell runs.
	Argv []string
	// Env is the process's environment besides PATH, HOME, LANG, TMPDIR
	// (and SYSTEMROOT) inherited from the gateway: K=V entries, which
	// override an inherited one of the same name.
	Env []string
	// Logger receives the process's stderr, one record per line, and its
	// exit; nil discards them.
	Logger *slog.Logger
	// MaxMessageBytes bounds each message the process writes on stdout
	// ([stdio.DefaultMaxFrameSize] when below 1). A longer one is read to
	// its end unheld and dropped: the call it answers fails with a
	// [*TooLargeError], and the session lives on; only one whose call
	// cannot be told (see oversizeLine) ends the session with [ErrGone].
	MaxMessageBytes int
	// MaxStderrLine bounds each stderr line logged (4 KiB when below 1);
	// the rest of a longer line is dropped.
	MaxStderrLine int
	// StderrLinesPerSecond and StderrBurst bound the rate of the stderr
	// lines logged, a token bucket of StderrBurst lines filled at
	// StderrLinesPerSecond (100 and 200 when not positive): lines beyond
	// it are dropped and counted ([Process.DroppedStderrLines]), and one
	// record says how many were: before the next line logged (at most once
	// a second), or at the end of the stream.
	StderrLinesPerSecond float64
	StderrBurst          int
	// Sandbox, when set, confines the process (sandbox.Prepare): the
	// program that runs the gateway must call sandbox.Main first.
	Sandbox *sandbox.Policy
	// Egress serves the sandbox's proxy listener, when its policy has one,
	// until the process exits.
	Egress *egress.Proxy
	// StartTimeout bounds the sandbox's launch, from the start to the
	// program's execution (30 s when not positive).
	StartTimeout time.Duration
	// KillGrace is how long Close waits for the process to exit once its
	// stdin is closed before it kills its process group (2 s when not
	// positive); at half of it, the group is sent SIGTERM.
	KillGrace time.Duration
}

// Process is a running stdio upstream: a child process speaking MCP on
// its stdin and stdout. It is safe for concurrent use.
type Process struct {
	cfg        ProcessConfig
	log        *slog.Logger
	cmd        *exec.Cmd
	conn       *stdio.Conn
	stderr     *os.File // our end of its stderr
	exited     chan struct{}
	stderrDone chan struct{}
	closeOnce  sync.Once
	waitErr    error // set before exited closes
	stderrRate *rate.Limiter
	dropped    atomic.Int64  // stderr lines over the rate
	egressDone chan struct{} // closed once the sandbox's proxy ended; nil without one
}

// StartProcess starts the process cfg describes, in a process group of
// its own so that Close ends its children too.
func StartProcess(cfg ProcessConfig) (*Process, error) {
	if len(cfg.Argv) == 0 {
		return nil, errors.New("upstream: empty command")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxStderrLine < 1 {
		cfg.MaxStderrLine = defaultMaxStderrLine
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = defaultKillGrace
	}
	if cfg.MaxMessageBytes < 1 {
		cfg.MaxMessageBytes = stdio.DefaultMaxFrameSize
	}
	if cfg.StderrLinesPerSecond <= 0 {
		cfg.StderrLinesPerSecond = defaultStderrRate
	}
	if cfg.StderrBurst <= 0 {
		cfg.StderrBurst = defaultStderrBurst
	}
	path, err := exec.LookPath(cfg.Argv[0])
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", cfg.Name, err)
	}
	var files []*os.File // every end of the three pipes, closed on failure
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, fmt.Errorf("upstream %s: %w", cfg.Name, err)
	}
	cmd := &exec.Cmd{
		Path:   path,
		Args:   cfg.Argv,
		Env:    processEnv(cfg.Env),
		Stdin:  inR,
		Stdout: outW,
		Stderr: errW,
	}
	ownGroup(cmd)
	var launch *sandbox.Launch
	if cfg.Sandbox != nil {
		if launch, err = sandbox.Prepare(cmd, *cfg.Sandbox); err != nil {
			closeAll()
			return nil, fmt.Errorf("upstream %s: %w", cfg.Name, err)
		}
	}
	err = cmd.Start()
	if launch != nil {
		launch.Started()
		err = sandbox.StartError(err)
	}
	if err != nil {
		if launch != nil {
			launch.Close()
		}
		closeAll()
		return nil, fmt.Errorf("upstream %s: %w", cfg.Name, err)
	}
	// The child holds its ends now; ours would keep its stdout open past
	// its exit.
	_, _, _ = inR.Close(), outW.Close(), errW.Close()
	var proxyLn net.Listener
	if launch != nil {
		timeout := cfg.StartTimeout
		if timeout <= 0 {
			timeout = defaultSandboxStart
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		proxyLn, err = launch.Wait(ctx)
		cancel()
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_, _, _ = inW.Close(), outR.Close(), errR.Close()
			return nil, fmt.Errorf("upstream %s: %w", cfg.Name, err)
		}
	}
	p := &Process{
		cfg:        cfg,
		log:        cfg.Logger.With("upstream", cfg.Name, "pid", cmd.Process.Pid),
		cmd:        cmd,
		conn:       stdio.New(outR, inW, stdio.WithMaxFrameSize(cfg.MaxMessageBytes), stdio.WithOversizeFrames(oversizeLine(cfg.MaxMessageBytes))),
		stderr:     errR,
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
		stderrRate: rate.NewLimiter(rate.Limit(cfg.StderrLinesPerSecond), cfg.StderrBurst),
	}
	if proxyLn != nil {
		px := cfg.Egress
		if px == nil {
			px = &egress.Proxy{} // allows nothing
		}
		p.egressDone = make(chan struct{})
		go func() {
			defer close(p.egressDone)
			_ = px.Serve(proxyLn)
		}()
		go func() {
			<-p.exited
			_ = proxyLn.Close()
		}()
	}
	go p.logStderr()
	go p.wait()
	return p, nil
}

// processEnv returns the inherited variables followed by env.
func processEnv(env []string) []string {
	var out []string
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return append(out, env...) // exec keeps the last of duplicate names
}

// Conn returns the MCP connection on the process's stdin and stdout. Its
// Close closes both pipes; the process sees end of input.
func (p *Process) Conn() transport.Conn { return p.conn }

// Pid returns the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited returns a channel closed once the process has exited and been
// waited for.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Close closes the process's stdin and stdout, waits half of KillGrace
// for it to exit, then sends its process group SIGTERM, waits the other
// half, then kills the group, and waits for it and for its stderr to be
// logged. It is idempotent and returns nil; the exit is logged.
func (p *Process) Close() error {
	p.closeOnce.Do(func() {
		_ = p.conn.Close()
		timer := time.NewTimer(p.cfg.KillGrace / 2)
		select {
		case <-p.exited:
		case <-timer.C:
			p.log.Info("upstream did not exit on end of input; terminating it", "grace_seconds", p.cfg.KillGrace.Seconds())
			termGroup(p.cmd)
			timer.Reset(p.cfg.KillGrace - p.cfg.KillGrace/2)
			select {
			case <-p.exited:
			case <-timer.C:
				p.log.Warn("upstream did not exit on end of input nor on SIGTERM; killing it", "grace_seconds", p.cfg.KillGrace.Seconds())
				killGroup(p.cmd)
				<-p.exited
			}
		}
		timer.Stop()
		// A grandchild that outlived the group's kill could hold stderr open.
		timer = time.NewTimer(p.cfg.KillGrace)
		select {
		case <-p.stderrDone:
		case <-timer.C:
			_ = p.stderr.Close()
			<-p.stderrDone
		}
		timer.Stop()
		if p.egressDone != nil {
			<-p.egressDone // closed with the process
		}
	})
	return nil
}

// wait waits for the process and logs its exit.
func (p *Process) wait() {
	p.waitErr = p.cmd.Wait()
	if p.waitErr != nil {
		p.log.Info("upstream process exited", "status", p.waitErr)
	} else {
		p.log.Debug("upstream process exited")
	}
	close(p.exited)
}

// DroppedStderrLines returns how many stderr lines were dropped so far
// for being over the rate (StderrLinesPerSecond).
func (p *Process) DroppedStderrLines() int64 { return p.dropped.Load() }

// logStderr logs the process's stderr line by line, each cut at
// MaxStderrLine bytes and at most at the rate of StderrLinesPerSecond,
// until end of stream.
func (p *Process) logStderr() {
	defer close(p.stderrDone)
	defer func() { _ = p.stderr.Close() }()
	r := bufio.NewReaderSize(&pacedReader{r: p.stderr}, p.cfg.MaxStderrLine)
	cut := false       // the rest of a long line is being skipped
	var unsaid int64   // lines dropped and not yet said
	var said time.Time // when they were last said
	defer func() {
		if unsaid > 0 {
			p.log.Warn("upstream stderr lines dropped", "dropped", unsaid)
		}
	}()
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 && !cut && !p.stderrRate.Allow() {
			p.dropped.Add(1)
			unsaid++
			cut = errors.Is(err, bufio.ErrBufferFull) // skip the rest of it too
			if err != nil && !cut {
				return
			}
			continue
		}
		if len(line) > 0 && !cut && unsaid > 0 && time.Since(said) >= time.Second {
			p.log.Warn("upstream stderr lines dropped", "dropped", unsaid)
			unsaid, said = 0, time.Now()
		}
		if len(line) > 0 && !cut {
			text := line
			if text[len(text)-1] == '\n' {
				text = text[:len(text)-1]
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				p.log.Info("upstream stderr", "line", string(text), "truncated", true)
			} else {
				p.log.Info("upstream stderr", "line", string(text))
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			cut = true
		case err != nil:
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				p.log.Debug("upstream stderr", "error", err)
			}
			return
		default:
			cut = false
		}
	}
}
