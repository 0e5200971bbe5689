package nginxtest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// Proxy is one nginx process of a test.
type Proxy struct {
	port int
	dir  string
}

// URL returns the proxy's base URL, with the host "localhost" (which the
// upstreams' DNS-rebinding protection accepts), without a path.
func (p *Proxy) URL() string { return "http://localhost:" + strconv.Itoa(p.port) }

// ErrorLog returns what nginx logged as errors.
func (p *Proxy) ErrorLog() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "error.log"))
	return string(b)
}

var conf = template.Must(template.New("nginx.conf").Parse(`worker_processes 1;
daemon off;
pid {{.Dir}}/nginx.pid;
error_log {{.Dir}}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path {{.Dir}}/body;
  proxy_temp_path {{.Dir}}/proxy;
  fastcgi_temp_path {{.Dir}}/fastcgi;
  uwsgi_temp_path {{.Dir}}/uwsgi;
  scgi_temp_path {{.Dir}}/scgi;
  upstream vigil {
{{- range .Upstreams}}
    server {{.}} max_fails=0;
{{- end}}
    keepalive 32;
  }
  server {
    listen 127.0.0.1:{{.Port}};
    location / {
      proxy_pass http://vigil;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 1h;
      proxy_next_upstream error timeout http_503 non_idempotent;
    }
  }
}
`))

// Start starts nginx in front of upstreams (host:port each) for t, and
// stops it when t ends. A request that finds an upstream down, or answered
// 503 by one that is shutting down, is tried on the next one, as a load
// balancer with health checks does.
func Start(t testing.TB, upstreams ...string) *Proxy {
	t.Helper()
	testkit.External(t, "nginx")
	bin, err := exec.LookPath("nginx")
	if err != nil {
		for _, p := range []string{"/usr/sbin/nginx", "/sbin/nginx"} {
			if _, serr := os.Stat(p); serr == nil {
				bin, err = p, nil
				break
			}
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("nginx is not installed (make test installs it: apt-get install nginx)")
		}
		t.Skip("nginx is not installed; make test installs it")
	}
	for attempt := 1; ; attempt++ {
		p, taken, err := start(t, bin, upstreams)
		if err == nil {
			return p
		}
		if !taken || attempt == portAttempts {
			t.Fatalf("nginx: %v", err)
		}
		t.Logf("nginx: its port was taken before it bound it; again on another (%d/%d)", attempt+1, portAttempts)
	}
}

// portAttempts is how many times nginx is started, each time on another
// free port, when another process took its port before it bound it.
const portAttempts = 4

// start starts nginx once, on a port that was free a moment ago; taken
// reports that it failed because another process took the port meanwhile.
func start(t testing.TB, bin string, upstreams []string) (p *Proxy, taken bool, err error) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, false, err
	}
	p = &Proxy{port: ln.Addr().(*net.TCPAddr).Port, dir: dir}
	_ = ln.Close()
	var buf bytes.Buffer
	if err := conf.Execute(&buf, map[string]any{"Dir": dir, "Port": p.port, "Upstreams": upstreams}); err != nil {
		return nil, false, err
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return nil, false, err
	}
	cmd := exec.Command(bin, "-c", path, "-e", filepath.Join(dir, "error.log"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, false, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited: //nolint:errcheck // stopped by us: how it exited does not matter
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited //nolint:errcheck // killed by us
		}
	})
	if err := p.wait(cmd.Process.Pid, exited); err != nil {
		logs := stderr.String() + p.ErrorLog()
		return nil, strings.Contains(logs, "Address already in use"), fmt.Errorf("%w\n%s", err, logs)
	}
	return p, false, nil
}

// wait waits until nginx, process pid, accepts connections: it wrote its
// pid file, which it does once it bound its port (a port another process
// took would accept connections too), and the port answers.
func (p *Proxy) wait(pid int, exited <-chan error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("exited: %w", err)
		default:
		}
		written, _ := os.ReadFile(filepath.Join(p.dir, "nginx.pid"))
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(p.port), 200*time.Millisecond)
		if err == nil && strings.TrimSpace(string(written)) != strconv.Itoa(pid) {
			_ = c.Close()
			err = errors.New("no pid file yet")
		}
		if err == nil {
			_ = c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("not listening within 10s")
		}
		time.Sleep(10 * time.Millisecond) // waiting for a process to listen: no event to wait on
	}
}
