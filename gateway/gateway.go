package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/upstream"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// maxListed bounds the tools, prompts, resources or templates one
// upstream may list.
const maxListed = 10_000

// Upstream describes an MCP server to front: a stdio server (Command) or
// a Streamable HTTP one (URL); exactly one of them is set.
type Upstream struct {
	// Name names the upstream in logs and, when several are mounted, is
	// the prefix of its tools' names (NAME_tool): letters, digits, '-'
	// and '.'.
	Name string
	// Command is the program and arguments of a stdio upstream, run
	// without a shell, in a process group of its own.
	Command []string
	// Env is the stdio upstream's environment, K=V entries, besides PATH,
	// HOME, LANG and TMPDIR, which it inherits; it inherits nothing else.
	Env []string
	// URL is the endpoint of a Streamable HTTP upstream.
	URL string
	// Header is sent with every request to an HTTP upstream: its own
	// credentials. A caller's token is never sent upstream.
	Header http.Header
}

// Config configures [Mount].
type Config struct {
	// Upstreams are the servers to front, at least one.
	Upstreams []Upstream
	// Logger receives the gateway's logs and each stdio upstream's
	// stderr; nil discards them.
	Logger *slog.Logger
}

// Gateway is the upstreams [Mount] mounted on a server. Close ends their
// sessions and processes.
type Gateway struct {
	srv    *server.Server
	mounts []*mount

	mu     sync.Mutex        // guards owners and each mount's cat
	owners map[string]string // "tool \"name\"" (prompt, resource, resource template) -> who serves it
}

// Restarts of an upstream that went away wait, after a start that
// failed, from minBackoff, doubling up to maxBackoff.
const (
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
)

// mount is one upstream mounted: its connection, shared by every caller,
// started again when a call finds it gone.
type mount struct {
	g      *Gateway
	up     Upstream
	prefix string // "" or NAME_
	log    *slog.Logger
	cat    *catalog // what is registered; guarded by g.mu
	// unchecked names the tools whose input schema the server could not
	// compile, warned about once (see catalog.addTool); guarded by g.mu.
	unchecked map[string]bool

	mu        sync.Mutex           // held while the upstream starts: callers wait for that start
	conn      atomic.Pointer[conn] // the current connection, set under mu; nil once closed
	closed    bool
	nextStart time.Time             // no start before this, after a failed one
	backoff   time.Duration         // the wait after the next failed start
	failed    atomic.Pointer[error] // why the last start failed; nil once one succeeds

	waiting   waitingCalls   // stateless callers' calls waiting for their retry (rounds.go)
	stale     chan struct{}  // 1-buffered: the upstream said a list changed (coalesced)
	quit      chan struct{}  // closed by Close: the refresher stops
	refresher sync.WaitGroup // the goroutine that lists again (refreshLoop)
}

// conn is one session with an upstream, and its process for stdio.
type conn struct {
	session *upstream.Session
	process *upstream.Process // nil for HTTP
}

// close ends the session and the process.
func (c *conn) close() {
	_ = c.session.Close()
	if c.process != nil {
		_ = c.process.Close()
	}
}

// Mount opens a session to each upstream of cfg (initialize, bounded by
// ctx), lists its tools, prompts, resources and resource templates, and
// registers them on srv with handlers that forward each call to it. With
// more than one upstream each tool and prompt is named NAME_name and each
// template's name is prefixed likewise; resource URIs and URI templates
// are kept as they are. Mount fails, having closed what it opened and
// registered nothing, when an upstream cannot be reached or initialized,
// or two tools (the server's own included), prompts, resources or
// templates would share a name or URI.
func Mount(ctx context.Context, srv *server.Server, cfg Config) (*Gateway, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := checkUpstreams(cfg.Upstreams); err != nil {
		return nil, err
	}
	g := &Gateway{srv: srv, owners: map[string]string{}}
	var cats []*catalog // each mount's, registered once every one is listed
	for _, n := range srv.ToolNames() {
		g.owners["tool "+strconv.Quote(n)] = "the server itself"
	}
	for _, up := range cfg.Upstreams {
		m := &mount{g: g, up: up, log: cfg.Logger, stale: make(chan struct{}, 1), quit: make(chan struct{})}
		if len(cfg.Upstreams) > 1 {
			m.prefix = up.Name + "_"
		}
		c, err := m.open(ctx)
		if err != nil {
			_ = g.Close()
			return nil, err
		}
		m.conn.Store(c)
		g.mounts = append(g.mounts, m)
		m.refresher.Go(m.refreshLoop)
		cat, err := m.list(ctx, c.session)
		if err == nil {
			g.mu.Lock()
			err = cat.claim(g.owners, false)
			g.mu.Unlock()
		}
		if err != nil {
			_ = g.Close()
			return nil, err
		}
		cats = append(cats, cat)
	}
	for i, m := range g.mounts {
		g.mu.Lock()
		err := cats[i].register(srv)
		if err == nil {
			m.cat = cats[i]
		}
		g.mu.Unlock()
		if err != nil {
			g.mu.Lock()
			for _, done := range g.mounts[:i] {
				done.cat.unregister(srv, nil)
			}
			g.mu.Unlock()
			_ = g.Close() // not under g.mu: closing waits for a refresh that may want it
			return nil, err
		}
	}
	return g, nil
}

// checkUpstreams checks the upstreams' names and targets.
func checkUpstreams(ups []Upstream) error {
	if len(ups) == 0 {
		return errors.New("gateway: no upstream")
	}
	seen := map[string]bool{}
	for _, up := range ups {
		if up.Name == "" || !server.ValidToolName(up.Name+"_x") || slices.Contains([]byte(up.Name), '_') {
			return fmt.Errorf("gateway: upstream name %q: use letters, digits, '-' and '.'", up.Name)
		}
		if seen[up.Name] {
			return fmt.Errorf("gateway: upstream %s named twice", up.Name)
		}
		seen[up.Name] = true
		if (len(up.Command) == 0) == (up.URL == "") {
			return fmt.Errorf("gateway: upstream %s: set exactly one of Command and URL", up.Name)
		}
	}
	return nil
}

// open starts the upstream and opens its session.
func (m *mount) open(ctx context.Context) (*conn, error) {
	up := m.up
	c := &conn{}
	var tc transport.Conn
	if up.URL != "" {
		tc = upstream.DialHTTP(upstream.HTTPConfig{URL: up.URL, Header: up.Header})
	} else {
		p, err := upstream.StartProcess(upstream.ProcessConfig{Name: up.Name, Argv: up.Command, Env: up.Env, Logger: m.log})
		if err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		c.process, tc = p, p.Conn()
	}
	s, err := upstream.Open(ctx, tc, upstream.Config{
		Name: up.Name, Logger: m.log, ClientName: "vigil-gateway",
		Capabilities:   json.RawMessage(`{"sampling":{},"elicitation":{},"roots":{},"extensions":{"io.modelcontextprotocol/skills":{}}}`),
		OnRequest:      askClient,
		OnNotification: m.notified,
	})
	if err != nil {
		if c.process != nil {
			_ = c.process.Close()
		}
		return nil, fmt.Errorf("gateway: %w", err)
	}
	c.session = s
	m.wantLogs(ctx, s)     // forward_more.go
	m.subscribeAll(ctx, s) // forward_more.go
	return c, nil
}

// refreshWithin bounds the listing after a list_changed.
const refreshWithin = 30 * time.Second

// notified handles the upstream's notifications that belong to no call:
// a list that changed is listed again and what is registered follows it;
// a resource update reaches its subscribers.
func (m *mount) notified(n *transport.Request) {
	switch n.Method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		select { // a burst of them costs one listing
		case m.stale <- struct{}{}:
		default:
		}
	case "notifications/resources/updated":
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(n.Params, &p) == nil && p.URI != "" {
			m.g.srv.ResourceUpdated(p.URI)
		}
	}
}

// refreshLoop lists the upstream again each time it said a list changed,
// until Close.
func (m *mount) refreshLoop() {
	for {
		select {
		case <-m.stale:
			m.refresh()
		case <-m.quit:
			return
		}
	}
}

// refresh lists the upstream again and registers what it lists now,
// removing what it no longer does; a name another upstream serves is
// left to it.
func (m *mount) refresh() {
	c := m.conn.Load()
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), refreshWithin)
	defer cancel()
	cat, err := m.list(ctx, c.session)
	if err != nil {
		m.log.Warn("gateway: listing again after list_changed failed", "upstream", m.up.Name, "error", err)
		return
	}
	m.g.mu.Lock()
	defer m.g.mu.Unlock()
	if m.cat == nil {
		return // Mount has not registered it yet
	}
	m.cat.release(m.g.owners)
	_ = cat.claim(m.g.owners, true)
	m.cat.unregister(m.g.srv, cat)
	if err := cat.register(m.g.srv); err != nil {
		m.log.Warn("gateway: registering again after list_changed failed", "upstream", m.up.Name, "error", err)
		cat = &catalog{m: m}
	}
	m.cat = cat
}

// askClient forwards a request of the upstream (sampling, elicitation,
// roots) to the downstream client whose call it belongs to, with that
// call's context, and returns the client's answer. A request that belongs
// to no downstream call, or that the client cannot answer, is refused.
func askClient(ctx context.Context, req *transport.Request) (json.RawMessage, error) {
	switch req.Method {
	case "sampling/createMessage", "elicitation/create", "roots/list":
	default:
		return nil, &transport.Error{Code: int64(protocol.CodeMethodNotFound), Message: "method not found"}
	}
	if w := waitingFrom(ctx); w != nil {
		return w.ask(ctx, req) // rounds.go: a stateless caller's call, asked across its retry
	}
	if server.RequestFromContext(ctx) == nil {
		return nil, &transport.Error{Code: int64(protocol.CodeInvalidRequest), Message: "no call of a client in flight that this request belongs to"}
	}
	if refusal := refuseStateless(ctx, req.Method); refusal != nil {
		return nil, refusal // eras.go
	}
	var params any
	if req.Params != nil {
		params = req.Params
	}
	var result json.RawMessage
	err := server.CallClient(ctx, req.Method, params, &result)
	return result, clientError(req.Method, err)
}

// clientError is the upstream's answer of the client's failure to answer
// method: its JSON-RPC error as it was, or that it does not support
// method; nil for nil.
func clientError(method string, err error) error {
	var se *server.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return &transport.Error{Code: int64(se.Code), Message: se.Message, Data: se.Data}
	case errors.Is(err, server.ErrCapability):
		return &transport.Error{Code: int64(protocol.CodeInvalidRequest), Message: "the client does not support " + method}
	default:
		return err
	}
}

// session returns the upstream's live session: the current one, or, when
// it has gone, a new one (unless a failed start is too recent).
func (m *mount) session(ctx context.Context) (*upstream.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, upstream.ErrClosed
	}
	if c := m.conn.Load(); c != nil && c.session.Err() == nil {
		return c.session, nil
	}
	if c := m.conn.Swap(nil); c != nil {
		c.close() // gone: its process has exited, or soon will
	}
	if wait := time.Until(m.nextStart); wait > 0 {
		return nil, fmt.Errorf("%w: the last start failed; next try in %v", upstream.ErrGone, wait.Round(time.Millisecond))
	}
	c, err := m.open(ctx)
	if err != nil {
		m.backoff = min(max(2*m.backoff, minBackoff), maxBackoff)
		m.nextStart = time.Now().Add(m.backoff)
		m.log.Warn("upstream did not start", "upstream", m.up.Name, "error", err, "retry_in", m.backoff)
		m.failed.Store(&err)
		return nil, err
	}
	m.failed.Store(nil)
	m.log.Info("upstream started again", "upstream", m.up.Name)
	m.backoff = 0
	m.conn.Store(c)
	return c.session, nil
}

// callTool returns the handler of the upstream's tool name: it forwards
// the call with the caller's context, relays its log messages, and its
// progress when the caller asked for progress.
func (m *mount) callTool(name string) server.ToolHandler {
	return func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		raw, err := m.forward(ctx, "tools/call", struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments,omitempty"`
		}{name, req.Arguments}, m.callNotes(ctx, req))
		if err != nil {
			return nil, err
		}
		return decodeToolResult(raw)
	}
}

// callNotes relays a call's log messages to its caller, and its progress
// when the caller asked for progress.
func (m *mount) callNotes(ctx context.Context, req *server.CallToolRequest) *upstream.Notes {
	notes := &upstream.Notes{Log: func(p json.RawMessage) { relayLog(ctx, p) }}
	if req.Request != nil {
		if _, ok := req.Request.Meta.Get("progressToken"); ok {
			notes.Progress = func(p json.RawMessage) { relayProgress(ctx, p) }
		}
	}
	return notes
}

// relayLog sends the upstream's log message of a call to the caller, as
// the upstream sent it, related to the caller's request, when the caller
// asked for its level.
func relayLog(ctx context.Context, params json.RawMessage) {
	if req := server.RequestFromContext(ctx); req != nil && req.Session != nil && clientWantsLog(ctx, params) {
		_ = req.Session.Notify(ctx, "notifications/message", params)
	}
}

// relayProgress reports the upstream's progress to the caller.
func relayProgress(ctx context.Context, params json.RawMessage) {
	var p struct {
		Progress float64 `json:"progress"`
		Total    float64 `json:"total"`
		Message  string  `json:"message"`
	}
	if json.Unmarshal(params, &p) == nil {
		_ = server.ReportProgress(ctx, p.Progress, p.Total, p.Message)
	}
}

// callError turns the failure of a forwarded call into the handler's
// error: the caller's own cause when its context ended, the upstream's
// JSON-RPC error as it was, and a protocol error naming the upstream when
// it is gone.
func (m *mount) callError(ctx context.Context, err error) error {
	var rpc *transport.Error
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case errors.As(err, &rpc):
		return &server.Error{Code: protocol.Code(rpc.Code), Message: rpc.Message, Data: rpc.Data}
	case errors.Is(err, upstream.ErrGone), errors.Is(err, upstream.ErrClosed):
		return server.NewError(protocol.CodeInternal, fmt.Errorf("upstream %s is gone", m.up.Name))
	default:
		return err
	}
}

// decodeToolResult decodes an upstream's tools/call result.
func decodeToolResult(raw json.RawMessage) (*server.CallToolResult, error) {
	var w struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
		Meta              server.Meta       `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, badResult(err)
	}
	res := &server.CallToolResult{Content: make([]server.Content, 0, len(w.Content)), IsError: w.IsError, Meta: w.Meta}
	for _, c := range w.Content {
		block, err := server.UnmarshalContent(c)
		if err != nil {
			return nil, badResult(err)
		}
		res.Content = append(res.Content, block)
	}
	if len(w.StructuredContent) > 0 && string(w.StructuredContent) != "null" {
		res.StructuredContent = w.StructuredContent
	}
	return res, nil
}

// Health returns nil while every upstream serves or was started again
// since it went away, and otherwise an error naming each upstream whose
// last start failed: for /readyz. It does not wait for a start under way.
func (g *Gateway) Health() error {
	var errs []error
	for _, m := range g.mounts {
		if err := m.failed.Load(); err != nil {
			errs = append(errs, fmt.Errorf("upstream %s: %w", m.up.Name, *err))
		}
	}
	return errors.Join(errs...)
}

// Close closes the upstreams' sessions and ends their processes, waiting
// for them; calls forwarded afterwards fail. It is idempotent and returns
// nil.
func (g *Gateway) Close() error {
	for _, m := range g.mounts {
		m.mu.Lock()
		if c := m.conn.Swap(nil); c != nil {
			c.close()
		}
		if !m.closed {
			m.closed = true
			close(m.quit)
		}
		m.mu.Unlock()
		m.waiting.closeAll()
		m.refresher.Wait() // a listing under way fails at once: its session is closed
	}
	return nil
}
