package redistest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// Server is one redis-server process of a test.
type Server struct {
	t     testing.TB
	bin   string
	dir   string
	port  int
	tls   *tlsFiles // nil: plain TCP, the default user with no password
	conf  string    // a configuration file, the first argument ("": none)
	extra []string  // arguments after the usual ones (a replica's, a Sentinel's)

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start starts redis-server for t and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return startServer(t, false)
}

// StartTLS starts redis-server for t as a shared deployment runs it, and
// stops it when t ends: TLS only (no plain port) with a certificate of a
// CA made for t (CAFile), the default user off, and the ACL user "vigil"
// (Password) limited to the commands, keys and channels Vigil uses. URL
// names that user without its password. Client is an administrator's.
func StartTLS(t testing.TB) *Server {
	t.Helper()
	return startServer(t, true)
}

func startServer(t testing.TB, withTLS bool, extra ...string) *Server {
	t.Helper()
	return startWith(t, withTLS, nil, extra)
}

// startWith starts a redis-server for t; conf, when not nil, writes the
// configuration file it starts from (for a port and a directory).
func startWith(t testing.TB, withTLS bool, conf func(port int, dir string) string, extra []string) *Server {
	t.Helper()
	testkit.External(t, "redis-server")
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed (make test installs it: apt-get install redis-server)")
		}
		t.Skip("redis-server is not installed; make test installs it")
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), extra: extra}
	if withTLS {
		if s.tls, err = writeTLSFiles(s.dir); err != nil {
			t.Fatal(err)
		}
	}
	var lastErr error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			t.Fatal(err)
		}
		if conf != nil {
			s.conf = filepath.Join(s.dir, "redis.conf")
			if err := os.WriteFile(s.conf, []byte(conf(s.port, s.dir)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if lastErr = s.start(); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("redis-server: %v", lastErr)
	}
	t.Cleanup(func() { s.Kill() })
	return s
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start runs redis-server on s.port and waits until it answers PING.
func (s *Server) start() error {
	var args []string
	if s.conf != "" {
		args = append(args, s.conf)
	}
	args = append(args,
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--logfile", "",
	)
	args = append(args, s.extra...)
	if f := s.tls; f != nil {
		args = append(args, f.serverArgs(s.port)...)
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	opt := s.adminOptions()
	opt.MaxRetries, opt.DialTimeout = -1, 200*time.Millisecond
	c := redis.NewClient(opt)
	defer func() { _ = c.Close() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("exited before answering: %w", err)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		info, err := c.Info(ctx, "server").Result()
		cancel()
		// Ours, not another redis-server that took the port meanwhile.
		if err == nil && !strings.Contains(info, "process_id:"+strconv.Itoa(cmd.Process.Pid)+"\r\n") {
			err = errors.New("another process answers on the port")
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited //nolint:errcheck // killed by us: the error returned says why
			return fmt.Errorf("no PONG within 10s: %w", err)
		}
		time.Sleep(10 * time.Millisecond) // waiting for a process to listen: no event to wait on
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	go func() {
		<-exited //nolint:errcheck // the server's end is what matters, not its exit status
		s.exited(cmd)
	}()
	return nil
}

// exited forgets cmd once it ended.
func (s *Server) exited(cmd *exec.Cmd) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == cmd {
		s.cmd = nil
	}
}

// Addr returns host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL returns redis://host:port/0, or with StartTLS
// rediss://vigil@host:port/0.
func (s *Server) URL() string {
	if s.tls != nil {
		return "rediss://" + vigilUser + "@" + s.Addr() + "/0"
	}
	return "redis://" + s.Addr() + "/0"
}

// Client returns a client of the server, closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(s.adminOptions())
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// adminOptions are the options of a client that may run any command.
func (s *Server) adminOptions() *redis.Options {
	opt := &redis.Options{Addr: s.Addr()}
	if f := s.tls; f != nil {
		opt.Username, opt.Password = adminUser, f.adminPassword
		opt.TLSConfig = &tls.Config{RootCAs: f.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	}
	return opt
}

// Stop stops the server as an operator restarting Redis does: it saves its
// data (SHUTDOWN SAVE), which Restart loads again, and exits.
func (s *Server) Stop() {
	opt := s.adminOptions()
	opt.MaxRetries = -1
	c := redis.NewClient(opt)
	_ = c.ShutdownSave(context.Background()).Err() // the connection ends with the server
	_ = c.Close()
	s.signal(false)
}

// Kill kills the server (SIGKILL) and waits for it to exit: its data is
// lost.
func (s *Server) Kill() { s.signal(true) }

func (s *Server) signal(kill bool) {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	if kill {
		_ = cmd.Process.Kill()
	} else {
		_ = cmd.Process.Signal(os.Interrupt)
	}
	for {
		s.mu.Lock()
		gone := s.cmd != cmd
		s.mu.Unlock()
		if gone {
			return
		}
		time.Sleep(5 * time.Millisecond) // the wait goroutine clears cmd
	}
}

// Pause stops the server's process (SIGSTOP) without closing its
// connections: a Redis that does not answer. Resume continues it.
func (s *Server) Pause() { s.sendSignal(syscall.SIGSTOP) }

// Resume continues the server after Pause (SIGCONT).
func (s *Server) Resume() { s.sendSignal(syscall.SIGCONT) }

func (s *Server) sendSignal(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

// Restart starts the server again on the same port and directory, after
// Stop or Kill.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("redis-server restart: %v", errors.Join(err))
	}
}

// ClusterKey returns the cluster key of the tests (redisstore's
// WithClusterKey, vigil's VIGIL_CLUSTER_KEY once base64-encoded): fixed
// bytes, so that every replica of a test shares it.
func ClusterKey() []byte { return []byte("vigil test cluster key, 32 bytes or more") }
