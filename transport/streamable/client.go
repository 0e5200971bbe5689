package streamable

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// The bounds of a client connection.
const (
	clientQueue         = 64 // messages read from the server's streams waiting for Read
	defaultDeleteWithin = 2 * time.Second
	abandonAfter        = 10 * time.Second // how long a POST whose caller gave up may take to start answering
)

// ClientConfig configures the client side of a Streamable HTTP
// connection ([Dial]).
type ClientConfig struct {
	// URL is the server's MCP endpoint.
	URL string
	// Client sends the requests; nil uses one of the connection's own,
	// as [NewHTTPClient] makes.
	Client *http.Client
	// Header is sent with every request (credentials, say).
	Header http.Header
	// Credentials, when set, returns headers set on each request besides
	// Header (a token got by client credentials, or by exchanging a
	// caller's). Its ctx is the one of the Write that sends the message
	// (also for the GETs that resume a call's stream), or the
	// connection's own for what no caller sends (the GET stream, answers
	// to the server, the DELETE). When it fails, the request is not sent,
	// a request is answered with an error holding its text (which must
	// hold no secret), and the connection lives on.
	Credentials func(ctx context.Context) (http.Header, error)
	// MaxMessageBytes bounds each message the server sends, a JSON body
	// or one SSE event ([stdio.DefaultMaxFrameSize] when below 1). A
	// longer one is dropped unread: Read returns a [*transport.DecodeError]
	// wrapping [transport.ErrFrameTooLarge], with the ID of the request
	// it answered, and the connection lives on.
	MaxMessageBytes int
	// Name names the server in the errors the connection answers a
	// request with itself (an HTTP error status, an answer cut off,
	// credentials that failed), which the caller reads: "server" when
	// empty; Vigil's gateway says "upstream".
	Name string
}

// clientConn is a [transport.Conn] on a Streamable HTTP server: each
// message written is a POST; what the server answers on the POSTs (a
// JSON body or an SSE stream) and on the GET stream it may offer once
// the session is initialized is what Read returns. Besides SessionID,
// its exported methods are the hooks of Vigil's gateway
// (gateway/internal/upstream), asserted there, outside the API on
// purpose: AnswerDirectly, RelatedCall, UseStateless and WriteNoted.
type clientConn struct {
	cfg       ClientConfig
	client    *http.Client
	ownClient bool            // client is the connection's own: Close closes its idle connections
	ctx       context.Context // ends at Close; every request and stream runs under it
	stop      context.CancelFunc
	in        chan inbound
	wg        sync.WaitGroup // the goroutines reading bodies

	mu        sync.Mutex
	session   string // Mcp-Session-Id, once the server gave one
	version   string // the protocol version initialize settled on
	err       error  // the first terminal error
	failed    chan struct{}
	closed    bool
	getOpen   bool                                // the GET stream was tried
	stateless string                              // the 2026-07-28 version spoken, "" in the session era (client_stateless.go)
	related   map[*transport.Request]transport.ID // a server's request or notification -> our request whose POST stream it came on

	answerNow func(*transport.Response) // set once, before the first Write (see AnswerDirectly)
}

// inbound is what Read returns next: a message, or a non-terminal error.
type inbound struct {
	m   transport.Message
	err error
}

// maxRelated bounds the server's requests whose call is remembered.
const maxRelated = 1024

// Dial returns the client's end of a Streamable HTTP connection to the
// server cfg describes: each message written is a POST (Write returns
// once the answer's head has arrived), and Read returns the messages the
// server answers, JSON or SSE, and sends on the GET stream opened after
// notifications/initialized. Streams cut before their answer are resumed
// with Last-Event-ID; an HTTP error status answers its request with an
// error, and a 404 on the session ends the connection with an error
// wrapping [transport.ErrPeerGone] and [ErrUnknownSession]. The Conn
// keeps the session's Mcp-Session-Id (it is a [transport.SessionIDer])
// and sends it, with the negotiated protocol version, on every request.
// It does no I/O until the first Write; Close ends every stream and the
// session, with a DELETE bounded to 2 s.
func Dial(cfg ClientConfig) transport.Conn {
	if cfg.MaxMessageBytes < 1 {
		cfg.MaxMessageBytes = stdio.DefaultMaxFrameSize
	}
	client, own := cfg.Client, cfg.Client == nil
	if own {
		client = NewHTTPClient(clientQueue)
	}
	c := &clientConn{cfg: cfg, client: client, ownClient: own, in: make(chan inbound, clientQueue), failed: make(chan struct{})}
	c.ctx, c.stop = context.WithCancel(context.Background())
	return c
}

// Read returns the next message of the server's streams.
func (c *clientConn) Read(ctx context.Context) (transport.Message, error) {
	select {
	case in := <-c.in:
		return in.m, in.err
	case <-c.failed:
		return nil, c.failure()
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// failure returns the terminal error.
func (c *clientConn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// fail makes err the terminal error, unless there is one.
func (c *clientConn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.failed)
	}
}

// Write POSTs msg. A request's answer arrives through Read, from the JSON
// body or the SSE stream of the POST's response; an HTTP error status
// becomes an error answer to the request (the connection lives on), but
// 404 on an established session means the server forgot it, which ends
// the connection.
func (c *clientConn) Write(ctx context.Context, msg transport.Message) error {
	return c.WriteNoted(ctx, msg, nil, nil)
}

// WriteNoted is Write with, for the POST of a request, header sent
// besides the connection's headers, and polled, when set, called each
// time the server ends the request's stream cleanly before its answer (it
// wants to be polled) and the stream is resumed.
func (c *clientConn) WriteNoted(ctx context.Context, msg transport.Message, header http.Header, polled func()) error {
	if polled != nil {
		ctx = context.WithValue(ctx, polledKey{}, polled) // for the stream's resumption (client_resume.go)
	}
	if err := c.failure(); err != nil {
		return err
	}
	body, err := transport.AppendMessage(nil, msg)
	if err != nil {
		return err
	}
	req, _ := msg.(*transport.Request)
	hreq, err := http.NewRequestWithContext(c.ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	c.headers(hreq)
	c.statelessHeaders(hreq, req)
	for k, vs := range header {
		hreq.Header[k] = vs
	}
	if err := c.credentials(ctx, hreq); err != nil {
		if req != nil && !req.IsNotification() {
			c.push(&transport.Response{ID: req.ID, Error: &transport.Error{
				Code: int64(protocol.CodeInternal), Message: "the " + c.name() + "'s credentials: " + err.Error(),
			}})
		}
		return nil
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json, text/event-stream")
	// The POST runs under the connection's lifetime, not the caller's: a
	// caller that gives up before the answer starts gets its cause at
	// once, and the POST is left abandonAfter to start answering, so
	// that the cancel the session sends meanwhile reaches the server
	// before the request's stream closes (which a server would take
	// for a cancel without a notification). It keeps the caller's
	// values, for the Credentials of a GET that resumes its stream.
	if t, ok := c.client.Transport.(*plainTransport); ok && hreq.URL.Scheme == "http" && !t.proxied(hreq) {
		if err := c.postInline(ctx, t, hreq, req); err != nil {
			return err
		}
		if req != nil && req.Method == "notifications/initialized" {
			c.openGet()
		}
		return nil
	}
	post, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(c.ctx, cancel)
	started := make(chan error, 1)
	if !c.spawn(func() {
		defer stop()
		c.post(post, cancel, hreq, req, started)
	}) {
		stop()
		cancel()
		return fmt.Errorf("streamable: client: %w", transport.ErrClosed)
	}
	select {
	case err := <-started:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		time.AfterFunc(abandonAfter, cancel)
		return context.Cause(ctx)
	}
	if req != nil && req.Method == "notifications/initialized" {
		c.openGet()
	}
	return nil
}

// post sends hreq, the POST of req (nil for a response), under ctx, which
// cancel ends; it reports on started when the answer starts, or why it
// did not, then reads the answer.
func (c *clientConn) post(ctx context.Context, cancel context.CancelFunc, hreq *http.Request, req *transport.Request, started chan<- error) {
	defer cancel()
	resp, err := c.client.Do(hreq.WithContext(ctx))
	switch {
	case err != nil && c.ctx.Err() != nil:
		started <- fmt.Errorf("streamable: client: %w", transport.ErrClosed)
		return
	case err != nil && ctx.Err() != nil: // abandoned: its caller has long gone
		c.lost(req, err)
		return
	case err != nil:
		err = fmt.Errorf("streamable: client: %w: %w", transport.ErrPeerGone, err)
		c.fail(err)
		started <- err
		return
	}
	defer func() { _ = resp.Body.Close() }()
	if req != nil && req.Method == "initialize" {
		c.mu.Lock()
		c.session = resp.Header.Get(headerSessionID)
		c.mu.Unlock()
	}
	started <- nil
	c.answered(ctx, req, resp)
}

// headers sets the headers every request carries.
func (c *clientConn) headers(r *http.Request) {
	for k, vs := range c.cfg.Header {
		r.Header[k] = append([]string(nil), vs...)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session != "" {
		r.Header.Set(headerSessionID, c.session)
	}
	if c.version != "" {
		r.Header.Set(headerProtocolVersion, c.version)
	}
}

// credentials sets on r the headers of Credentials for ctx.
func (c *clientConn) credentials(ctx context.Context, r *http.Request) error {
	if c.cfg.Credentials == nil {
		return nil
	}
	h, err := c.cfg.Credentials(ctx)
	if err != nil {
		return err
	}
	for k, vs := range h {
		r.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	return nil
}

// answered reads what the server answered to the POST of req (nil for a
// notification or a response), under the POST's ctx.
func (c *clientConn) answered(ctx context.Context, req *transport.Request, resp *http.Response) {
	mediaType := mediaTypeOf(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusNotFound && c.SessionID() != "":
		c.fail(fmt.Errorf("streamable: client: HTTP 404 on the session: %w: %w", transport.ErrPeerGone, ErrUnknownSession))
	case resp.StatusCode/100 != 2:
		if req != nil && !req.IsNotification() {
			c.push(c.errorAnswer(req, resp, mediaType))
		}
	case mediaType == "text/event-stream":
		var st sseState
		if done, err := c.readEvents(req, resp.Body, &st); !done {
			c.resumeOrLose(ctx, req, &st, err)
		}
	case mediaType == "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.cfg.MaxMessageBytes)+1))
		switch {
		case err != nil && !c.reachable(ctx, err):
			// the connection failed: req ends with its error (client_death.go)
		case err != nil:
			c.lost(req, err)
		case len(data) > c.cfg.MaxMessageBytes:
			c.tooLarge(req)
		default:
			c.decodedAlone(req, data)
		}
	default:
		c.lost(req, fmt.Errorf("unexpected content type %q", mediaType))
	}
}

// mediaTypeOf returns the media type of a Content-Type header: the
// usual bare "application/json" without parsing it (mime.ParseMediaType
// makes a map of parameters on every answer).
func mediaTypeOf(contentType string) string {
	if contentType == "application/json" || contentType == "text/event-stream" {
		return contentType
	}
	mediaType, _, _ := mime.ParseMediaType(contentType)
	return mediaType
}

// errorAnswer is the answer to req of an HTTP error status: the JSON-RPC
// error the body holds when it answers req (as 2026-07-28 servers
// send), else an internal error naming the status.
func (c *clientConn) errorAnswer(req *transport.Request, resp *http.Response, mediaType string) *transport.Response {
	if mediaType == "application/json" {
		data, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.cfg.MaxMessageBytes)+1))
		if err == nil && len(data) <= c.cfg.MaxMessageBytes {
			if m, err := transport.DecodeOwnedMessage(data); err == nil {
				if r, ok := m.(*transport.Response); ok && r.ID == req.ID && r.Error != nil {
					r.Error.HTTPStatus = resp.StatusCode
					return r
				}
			}
		}
	}
	return &transport.Response{ID: req.ID, Error: &transport.Error{
		Code: int64(protocol.CodeInternal), Message: fmt.Sprintf("%s answered HTTP %d", c.name(), resp.StatusCode),
		HTTPStatus: resp.StatusCode,
	}}
}

// lost answers req, whose answer was cut off, with an error (the
// connection lives on: another POST may well succeed).
func (c *clientConn) lost(req *transport.Request, err error) {
	if req == nil || req.IsNotification() || c.ctx.Err() != nil {
		return
	}
	c.push(&transport.Response{ID: req.ID, Error: &transport.Error{
		Code: int64(protocol.CodeInternal), Message: "the " + c.name() + "'s answer was cut off: " + c.callerText(err),
	}})
}

// readEvents reads an SSE stream, each event's data one message, keeping
// in st what resuming it needs. It reports whether the stream is done:
// it carried req's answer, or broke a bound (the connection then failed);
// else why it ended before that (io.EOF when it just ended).
func (c *clientConn) readEvents(req *transport.Request, body io.Reader, st *sseState) (bool, error) {
	r := bufio.NewReaderSize(body, 4096)
	var data bytes.Buffer
	skipping := false // the rest of an event over the bound
	for {
		line, err := readLine(r, c.cfg.MaxMessageBytes)
		over := errors.Is(err, transport.ErrFrameTooLarge)
		if over {
			err = discardLine(r)
		}
		if err != nil {
			return false, err
		}
		isData := bytes.HasPrefix(line, []byte("data:"))
		v := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
		if !skipping && (over || isData && data.Len()+len(v)+1 > c.cfg.MaxMessageBytes) {
			if c.tooLarge(req) {
				return true, nil // req failed: the stream has done its work
			}
			skipping = true
			data.Reset()
		}
		switch {
		case skipping:
			skipping = len(line) > 0 || over
		case len(line) == 0: // the end of an event
			if data.Len() > 0 {
				st.events++
				if c.decoded(req, bytes.Clone(data.Bytes())) {
					return true, nil // req's answer: the stream has done its work
				}
				data.Reset()
			}
		case isData:
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(v)
		default:
			st.field(line)
		}
	}
}

// readLine reads one line, without its end (\n or \r\n), of at most
// limit bytes.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > limit+2 {
			return nil, transport.ErrFrameTooLarge
		}
		line = append(line, chunk...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return nil, err
		}
		return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")), nil
	}
}

// discardLine reads the rest of a line.
func discardLine(r *bufio.Reader) error {
	for {
		_, err := r.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// tooLarge reports a message over MaxMessageBytes, dropped unread, that
// answered the POST of req (nil for the GET stream or a notification's):
// Read returns a [*transport.DecodeError] for it, as the answer to req
// when req is a request, which it then reports.
func (c *clientConn) tooLarge(req *transport.Request) bool {
	answers := req != nil && !req.IsNotification()
	var id transport.ID
	if answers {
		id = req.ID
	}
	c.pushErr(tooLarge(answers, id, c.cfg.MaxMessageBytes))
	return answers
}

// AnswerDirectly makes the answers to our requests that come alone in a
// JSON body go to f, on the goroutine that read them (the caller's, for
// an answer read inline), rather than through Read: no message of the
// POST can precede them, and the read loop need not wake for them. It is
// called before the first Write.
func (c *clientConn) AnswerDirectly(f func(*transport.Response)) {
	c.answerNow = f
}

// decodedAlone is decoded for a message that is the whole of a POST's
// JSON body: the answer to req goes to answerNow when set.
func (c *clientConn) decodedAlone(req *transport.Request, data []byte) {
	if c.answerNow == nil || req == nil || req.IsNotification() || req.Method == "initialize" {
		c.decoded(req, data)
		return
	}
	m, err := transport.DecodeOwnedMessage(data)
	if err != nil {
		c.lost(req, err)
		return
	}
	if resp, ok := m.(*transport.Response); ok && resp.ID == req.ID {
		c.answerNow(resp)
		return
	}
	c.decoded(req, data) // something else: as any message of the POST
}

// decoded decodes a message of the server and queues it for Read; it
// reports whether it was the answer to req. The answer to initialize
// settles the protocol version later requests carry.
func (c *clientConn) decoded(req *transport.Request, data []byte) bool {
	m, err := transport.DecodeOwnedMessage(data)
	if err != nil {
		c.lost(req, err)
		return false
	}
	if up, ok := m.(*transport.Request); ok && req != nil && !req.IsNotification() {
		c.mu.Lock()
		if c.related == nil {
			c.related = make(map[*transport.Request]transport.ID)
		}
		if len(c.related) < maxRelated {
			c.related[up] = req.ID
		}
		c.mu.Unlock()
	}
	resp, ok := m.(*transport.Response)
	answer := ok && req != nil && resp.ID == req.ID
	if answer && req.Method == "initialize" && resp.Result != nil {
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(resp.Result, &r) == nil {
			c.mu.Lock()
			c.version = r.ProtocolVersion
			c.mu.Unlock()
		}
	}
	c.push(m)
	return answer
}

// RelatedCall returns, once, the id of the request on whose POST stream
// the server sent m.
func (c *clientConn) RelatedCall(m *transport.Request) (transport.ID, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	related, ok := c.related[m]
	delete(c.related, m)
	return related, ok
}

// push queues m for Read, waiting while the queue is full (the server's
// stream waits meanwhile) until the connection closes.
func (c *clientConn) push(m transport.Message) {
	c.queue(inbound{m: m})
}

// pushErr queues for Read err, a non-terminal error, as push does.
func (c *clientConn) pushErr(err error) {
	c.queue(inbound{err: err})
}

// queue queues in for Read, as push does.
func (c *clientConn) queue(in inbound) {
	select {
	case c.in <- in:
	case <-c.ctx.Done():
	case <-c.failed:
	}
}

// spawn runs f in a goroutine Close waits for, unless Close has begun;
// it reports whether f runs.
func (c *clientConn) spawn(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Go(f)
	return true
}

// SessionID returns the session's Mcp-Session-Id: empty before the answer
// to initialize, and in the stateless era.
func (c *clientConn) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// openGet starts, once, the GET stream on which the server sends what
// belongs to no request (list_changed, resource updates): see listen.
func (c *clientConn) openGet() {
	c.mu.Lock()
	tried := c.getOpen
	c.getOpen = true
	c.mu.Unlock()
	if !tried {
		c.spawn(c.listen)
	}
}

// Close ends the streams, sends DELETE for the session (bounded), and
// waits for the goroutines reading bodies. It is idempotent.
func (c *clientConn) Close() error {
	c.mu.Lock()
	closed := c.closed
	c.closed = true
	c.mu.Unlock()
	if closed {
		return nil
	}
	if c.ownClient {
		defer c.client.CloseIdleConnections()
	}
	c.fail(fmt.Errorf("streamable: client: %w", transport.ErrClosed))
	c.stop()
	c.wg.Wait()
	if session := c.SessionID(); session != "" {
		ctx, cancel := context.WithTimeout(context.Background(), defaultDeleteWithin)
		defer cancel()
		if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.cfg.URL, nil); err == nil {
			c.headers(req)
			if c.credentials(ctx, req) != nil {
				return nil
			}
			if resp, err := c.client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
				_ = resp.Body.Close()
			}
		}
	}
	return nil
}
