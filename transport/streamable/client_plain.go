package streamable

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// plainTransport is the [http.RoundTripper] of plain-HTTP servers: each
// request is written, and its answer's head read, on the goroutine that
// sends it, over an HTTP/1.1 keep-alive connection of its own pool. Go's
// Transport hands every request to two goroutines per connection (one
// writes it, one reads the answer), three goroutine switches a call
// that cost a gateway hop about a tenth of its CPU (docs/perf/ROUNDS.md);
// the wire format is net/http's ([http.Request.Write],
// [http.ReadResponse]). A request over TLS or through a proxy goes
// through fallback.
type plainTransport struct {
	fallback *http.Transport
	dialer   net.Dialer
	maxIdle  int // idle connections kept per address

	mu     sync.Mutex
	idle   map[string][]*plainConn // by host:port, the most recently used last
	closed bool
}

// maxAnswerHead bounds the head of an answer (its status line and
// headers) a plainTransport reads: net/http's Transport's default.
const maxAnswerHead = 10 << 20

// errAnswerHeadTooLarge is the error of an answer's head over
// maxAnswerHead.
var errAnswerHeadTooLarge = errors.New("streamable: client: the answer's head is over 10 MiB")

// plainConn is one connection of a plainTransport.
type plainConn struct {
	nc net.Conn
	lr headLimit // what br reads from nc through
	br *bufio.Reader
	bw *bufio.Writer

	cmu   sync.Mutex // guards watch
	watch uint64     // the caller's watch whose end interrupts the read (client_inline.go)
}

// NewHTTPClient returns an HTTP client for [Dial]'s connections to share
// (as [ClientConfig].Client), keeping up to maxIdlePerHost idle
// connections per address. A plain-HTTP request is written, and its
// answer's head read, on the goroutine that sends it, over a keep-alive
// pool of the client's own (Go's Transport hands each request to two
// goroutines more); https, and a request through a proxy, go through a
// clone of [http.DefaultTransport]. It follows no redirect, which would
// carry the connection's headers elsewhere.
func NewHTTPClient(maxIdlePerHost int) *http.Client {
	fallback := http.DefaultTransport.(*http.Transport).Clone()
	fallback.MaxIdleConnsPerHost = maxIdlePerHost
	return &http.Client{
		Transport:     newPlainTransport(fallback, maxIdlePerHost),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// newPlainTransport returns a RoundTripper that sends plain-HTTP requests
// itself, keeping up to maxIdle idle connections per address, and the
// others (https, a proxy that fallback's Proxy names) through fallback.
// Its CloseIdleConnections closes both's.
func newPlainTransport(fallback *http.Transport, maxIdle int) *plainTransport {
	return &plainTransport{fallback: fallback, maxIdle: maxIdle, dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}}
}

// RoundTrip sends req and returns its answer, whose body must be closed;
// the connection goes back to the pool when the body was read to its end.
// A request whose context ends meanwhile fails, as does the read of its
// body.
func (t *plainTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" || t.proxied(req) {
		return t.fallback.RoundTrip(req)
	}
	addr := plainAddr(req.URL)
	ctx := req.Context()
	pc, err := t.get(ctx, addr)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	stop := context.AfterFunc(ctx, pc.interrupt)
	resp, err := pc.roundTrip(req)
	if err != nil {
		stop()
		_ = pc.nc.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	t.keepBody(resp, pc, addr, stop)
	return resp, nil
}

// addr returns the host:port of a plain-HTTP URL.
func plainAddr(u *url.URL) string {
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "80")
	}
	return u.Host
}

// keepBody makes resp's body give pc back to the pool at its end (see
// plainBody); stop stops what interrupts pc's I/O.
func (t *plainTransport) keepBody(resp *http.Response, pc *plainConn, addr string, stop func() bool) {
	resp.Body = &plainBody{body: resp.Body, t: t, pc: pc, addr: addr, stop: stop, reuse: !resp.Close, eof: resp.Body == http.NoBody}
}

// interrupt makes the connection's I/O under way, and later, return.
func (pc *plainConn) interrupt() { _ = pc.nc.SetDeadline(time.Unix(1, 0)) } // in the past

// proxied reports whether req goes through a proxy.
func (t *plainTransport) proxied(req *http.Request) bool {
	if t.fallback.Proxy == nil {
		return false
	}
	u, err := t.fallback.Proxy(req)
	return err != nil || u != nil
}

// closeBody closes req's body, as a RoundTripper must even when it fails.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// roundTrip writes req and reads its answer's head (past any 1xx).
func (pc *plainConn) roundTrip(req *http.Request) (*http.Response, error) {
	if err := pc.send(req); err != nil {
		return nil, err
	}
	return pc.head(req)
}

// send writes req.
func (pc *plainConn) send(req *http.Request) error {
	if err := req.Write(pc.bw); err != nil {
		return err
	}
	return pc.bw.Flush()
}

// head reads the head of req's answer (past any 1xx), of at most
// maxAnswerHead bytes.
func (pc *plainConn) head(req *http.Request) (*http.Response, error) {
	pc.lr.left = maxAnswerHead
	defer func() { pc.lr.left = -1 }()
	for {
		resp, err := http.ReadResponse(pc.br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
	}
}

// get returns an idle connection to addr that the peer has not closed,
// else a new one.
func (t *plainTransport) get(ctx context.Context, addr string) (*plainConn, error) {
	for {
		t.mu.Lock()
		l := t.idle[addr]
		if len(l) == 0 {
			t.mu.Unlock()
			break
		}
		pc := l[len(l)-1]
		l[len(l)-1] = nil
		t.idle[addr] = l[:len(l)-1]
		t.mu.Unlock()
		if pc.br.Buffered() == 0 && idleOpen(pc.nc) {
			return pc, nil
		}
		_ = pc.nc.Close() // closed by the peer while idle (its idle timeout)
	}
	nc, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	pc := &plainConn{nc: nc, lr: headLimit{r: nc, left: -1}, bw: bufio.NewWriterSize(nc, 4096)}
	pc.br = bufio.NewReaderSize(&pc.lr, 4096)
	return pc, nil
}

// headLimit is a connection's reader that lets at most left bytes
// through while an answer's head is read (left < 0: any number).
type headLimit struct {
	r    io.Reader
	left int64
}

// Read reads from r, within left.
func (l *headLimit) Read(p []byte) (int, error) {
	if l.left < 0 {
		return l.r.Read(p)
	}
	if l.left == 0 {
		return 0, errAnswerHeadTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// put keeps pc for the next request to addr, unless the pool is full or
// closed.
func (t *plainTransport) put(addr string, pc *plainConn) {
	t.mu.Lock()
	if !t.closed && len(t.idle[addr]) < t.maxIdle {
		if t.idle == nil {
			t.idle = map[string][]*plainConn{}
		}
		t.idle[addr] = append(t.idle[addr], pc)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	_ = pc.nc.Close()
}

// CloseIdleConnections closes the idle connections, the fallback's too;
// connections in use are closed when their answer has been read.
func (t *plainTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, l := range idle {
		for _, pc := range l {
			_ = pc.nc.Close()
		}
	}
	t.fallback.CloseIdleConnections()
}

// plainBody is an answer's body: its connection goes back to the pool
// as soon as the body has been read to its end (before the reader sees
// the end, so that what it then sends can have the connection), when
// the request's context has not ended; else Close closes it.
type plainBody struct {
	body  io.ReadCloser
	t     *plainTransport
	pc    *plainConn
	addr  string
	stop  func() bool // the request context's AfterFunc
	reuse bool        // the answer allows another request on the connection
	eof   bool
	once  sync.Once
}

// Read reads the body.
func (b *plainBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	n, err := b.body.Read(p)
	if errors.Is(err, io.EOF) {
		b.eof = true
		b.release()
	}
	return n, err
}

// Close ends the body: the connection is kept when it can serve again.
func (b *plainBody) Close() error {
	b.release()
	return nil
}

// release gives the connection back, or closes it, once.
func (b *plainBody) release() {
	b.once.Do(func() {
		keep := b.stop() && b.eof && b.reuse
		if !keep {
			_ = b.pc.nc.Close() // before body.Close, which would read what is left
		}
		_ = b.body.Close()
		if keep {
			b.t.put(b.addr, b.pc)
		}
	})
}
