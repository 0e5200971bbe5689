package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/oversize"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The defaults of [Config]'s bounds.
const (
	defaultMaxQueuedNotifications = 256
	defaultMaxIncoming            = 16
	defaultWriteTimeout           = 10 * time.Second
	notesBuffer                   = 32      // notifications a call holds for its caller (Notes)
	notesBytes                    = 1 << 20 // the bytes of their params it holds: one more is let in only when it holds none
)

// Config configures a [Session]. The zero Config is usable: no logs, no
// notifications delivered, every request of the upstream refused.
type Config struct {
	// Name names the upstream in logs.
	Name string
	// Logger receives the session's logs; nil discards them.
	Logger *slog.Logger
	// ClientName and ClientVersion are the clientInfo sent in initialize
	// ("vigil" and "dev" when empty).
	ClientName, ClientVersion string
	// ProtocolVersion is the version asked for in initialize
	// ([protocol.Version20251125] when empty). The session accepts any
	// 2025-era version the upstream answers with. Over HTTP, an upstream
	// that refuses initialize is asked server/discover, and spoken to
	// statelessly when it speaks 2026-07-28; [protocol.Version20260728]
	// here does that at once, without initialize.
	ProtocolVersion string
	// Capabilities are the client capabilities declared in initialize, a
	// JSON object ({} when nil): declare sampling, elicitation or roots
	// only when OnRequest can answer them.
	Capabilities json.RawMessage
	// OnNotification receives the upstream's notifications other than
	// progress, cancellation and those a call's Notes take (logging,
	// list_changed, resource updates...), in order, one at a time, from one goroutine. When it
	// falls MaxQueuedNotifications behind, further notifications are
	// dropped and counted ([Stats]). The session never modifies n.
	OnNotification func(n *transport.Request)
	// OnRequest answers a request of the upstream (sampling, elicitation,
	// roots); nil refuses them all with method not found. It runs in a
	// goroutine of its own. Its context is derived from the context of
	// the call the request belongs to, when the session knows it (the
	// call on whose HTTP stream it arrived; else the only call in
	// flight), and from none otherwise; it ends when that call ends, the
	// upstream cancels the request, or the session ends. A
	// *transport.Error it returns is sent as is, any other error as an
	// internal error without its text. At most MaxIncoming run at once;
	// more are refused.
	OnRequest func(ctx context.Context, req *transport.Request) (json.RawMessage, error)
	// OneClient says the session serves one client, whose answer to the
	// upstream's request is due whether or not the call the request came
	// with still runs: OnRequest's context then keeps the call's values
	// but ends only when the upstream cancels the request or the session
	// ends. Without it, a request whose call ends first is answered with
	// an error.
	OneClient bool
	// MaxQueuedNotifications bounds the notifications waiting for
	// OnNotification (256 when below 1).
	MaxQueuedNotifications int
	// MaxIncoming bounds the upstream's requests running at once (16 when
	// below 1).
	MaxIncoming int
	// WriteTimeout bounds the writes that no caller waits for: a
	// cancellation, an answer to the upstream (10 s when not positive).
	WriteTimeout time.Duration
}

// Stats counts what a session dropped of what the upstream sent.
type Stats struct {
	DroppedNotifications int64 // OnNotification was MaxQueuedNotifications behind, or a call's Notes.Log was behind
	DroppedProgress      int64 // for no call in flight, or its caller was behind
	LateResponses        int64 // to no call in flight: cancelled, or never asked
	InvalidMessages      int64 // frames that were not JSON-RPC, batches, unusable ids
	RefusedRequests      int64 // upstream requests over MaxIncoming
	OversizeMessages     int64 // messages over the transport's bound, dropped unread, the session living on
}

// InitializeResult is what the upstream answered to initialize.
type InitializeResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      json.RawMessage `json:"serverInfo"`
	Instructions    string          `json:"instructions,omitempty"`
}

// Session is one MCP client session with an upstream server, made by
// [Open]. Its methods are safe for concurrent use. The owner calls Close
// once done with it, whether or not the upstream has gone, to wait for
// the session's goroutines.
type Session struct {
	conn  transport.Conn
	cfg   Config
	log   *slog.Logger
	init  InitializeResult
	meta  map[string]json.RawMessage // 2026-07-28: the _meta members of every request; nil in the session era
	ctx   context.Context            // ends when the session ends
	stop  context.CancelCauseFunc
	notes chan *transport.Request // for OnNotification
	wg    sync.WaitGroup          // the read loop, the delivery, the upstream's requests
	ended chan struct{}           // closed by end
	ids   atomic.Int64            // the last request id used

	mu sync.Mutex
	st state

	dropNotes, dropProgress, late, invalid, refused, oversized atomic.Int64
}

// state is what the session's lock guards.
type state struct {
	// freed is closed, and made again by the next to wait, when a call
	// leaves the pending ones (see waitTurn); nil while no one waits.
	freed    chan struct{}
	err      error                            // why the session ended; nil while it lives
	calls    map[int64]*call                  // our requests awaiting their answers
	tokens   map[string]int64                 // the progress tokens (JSON) of calls with Progress, and their ids
	incoming map[transport.ID]func(err error) // the upstream's requests running, by id: their cancel
	// asking holds the method of each of the upstream's requests taken
	// by OnRequest, by id, until its answer is written (see Settle);
	// answered is closed, and made again by the next to wait, when one
	// leaves it; nil while no one waits.
	asking   map[transport.ID]string
	answered chan struct{}
	requests int // the upstream's requests OnRequest took, since the session began
}

// Notes receives the notifications that belong to a call, in the
// caller's goroutine (see [Session.Call]).
type Notes struct {
	// Progress, when set, asks for progress (the request carries a
	// progress token) and receives the params of each progress
	// notification.
	Progress func(params json.RawMessage)
	// Log, when set, receives the params of each notifications/message
	// of the call: sent on its HTTP stream, or, over a Conn that tells no
	// stream (stdio), while it was the only call in flight.
	Log func(params json.RawMessage)
	// Meta, when set, is members of a JSON object without its braces
	// (`"k":v,...`) that the request carries in params._meta besides its
	// progress token, such as the caller's trace context.
	Meta []byte
	// ProgressToken, when set with Progress, is the token the request
	// carries, a JSON string or integer (the caller's own, say), when no
	// other call in flight on the session carries it; otherwise, or when
	// it is neither, the session's own token. The upstream's progress is
	// matched to the call by it.
	ProgressToken json.RawMessage
	// Aside leaves the call out when what the upstream sends without
	// naming a call (a log message, a request, over stdio) is given to
	// the only call in flight: a long-lived call such as
	// subscriptions/listen, that would otherwise take them all.
	Aside bool
	// Owner is whom the call is for (a principal's key). On a session the
	// calls of several owners share, a call waits, within its context,
	// while another owner's calls are in flight (abandoned ones included,
	// Aside ones not): what the upstream sends without naming a call can
	// then only be one owner's.
	Owner string
	// Polled, when set, is called each time an HTTP upstream ends the
	// call's SSE stream before its answer, cleanly and with event ids, as
	// a server does that wants to be polled (SEP-1699), just before the
	// stream is resumed with Last-Event-ID. It runs on a goroutine of the
	// connection, not the caller's.
	Polled func()
	// Header, when set, is HTTP headers the request carries to an HTTP
	// upstream besides the transport's own (the Mcp-Param-* mirrors of a
	// tool's arguments, say); other transports ignore it.
	Header http.Header
}

// call is one request of ours awaiting its answer.
type call struct {
	token string          // its progress token (JSON); "" without Progress
	ctx   context.Context // the caller's
	// abandoned, when not zero, is when its caller left before the answer
	// (see abandon): until the answer or abandonedFor later, it still
	// counts as in flight, so that what the upstream sends without naming
	// a call goes to no other call, and it takes nothing itself.
	abandoned time.Time
	done      chan struct{}           // closed once result or err is set
	notes     chan *transport.Request // its progress and log notifications; nil without Notes
	held      atomic.Int64            // the bytes of the params of those in notes (see queue)
	wants     Notes
	result    json.RawMessage
	err       error
}

// errUpstreamCancel is the cause of an upstream request's context when
// the upstream cancelled it.
var errUpstreamCancel = errors.New("upstream: request cancelled by the upstream")

// Open starts an MCP session on conn: it runs initialize (bounded by
// ctx) and sends notifications/initialized. The session owns conn from
// then on, and closes it when it ends; when Open fails, conn is closed.
func Open(ctx context.Context, conn transport.Conn, cfg Config) (*Session, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxQueuedNotifications < 1 {
		cfg.MaxQueuedNotifications = defaultMaxQueuedNotifications
	}
	if cfg.MaxIncoming < 1 {
		cfg.MaxIncoming = defaultMaxIncoming
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = defaultWriteTimeout
	}
	s := &Session{
		conn:  conn,
		cfg:   cfg,
		log:   cfg.Logger.With("upstream", cfg.Name),
		notes: make(chan *transport.Request, cfg.MaxQueuedNotifications),
		ended: make(chan struct{}),
		st:    state{calls: make(map[int64]*call), tokens: make(map[string]int64), incoming: make(map[transport.ID]func(error)), asking: make(map[transport.ID]string)},
	}
	s.ctx, s.stop = context.WithCancelCause(context.Background())
	if d, ok := conn.(directAnswers); ok {
		d.AnswerDirectly(s.answer)
	}
	s.wg.Go(s.readLoop)
	s.wg.Go(s.deliver)
	if err := s.start(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// initialize runs the handshake.
func (s *Session) initialize(ctx context.Context) error {
	version := cmp(s.cfg.ProtocolVersion, protocol.Version20251125)
	caps := s.cfg.Capabilities
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	params, err := json.Marshal(map[string]any{
		"protocolVersion": version,
		"capabilities":    caps,
		"clientInfo":      map[string]string{"name": cmp(s.cfg.ClientName, "vigil"), "version": cmp(s.cfg.ClientVersion, "dev")},
	})
	if err != nil {
		return err
	}
	raw, err := s.Call(ctx, "initialize", params, nil)
	if err != nil {
		return fmt.Errorf("upstream %s: initialize: %w", s.cfg.Name, err)
	}
	if err := json.Unmarshal(raw, &s.init); err != nil {
		return fmt.Errorf("upstream %s: initialize: %w: %w", s.cfg.Name, ErrGone, err)
	}
	if !sessionVersion(s.init.ProtocolVersion) {
		return fmt.Errorf("upstream %s: initialize: unsupported protocol version %q", s.cfg.Name, s.init.ProtocolVersion)
	}
	return s.Notify(ctx, "notifications/initialized", nil)
}

// sessionVersion reports whether v is a protocol version of the session
// era, the one a session speaks.
func sessionVersion(v string) bool {
	return v != protocol.Version20260728 && slices.Contains(protocol.Versions(), v)
}

// cmp returns s, or def when s is empty.
func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Initialized returns what the upstream answered to initialize.
func (s *Session) Initialized() InitializeResult { return s.init }

// Call sends the request method with params (a JSON object, or nil) and
// waits for its result. An error answer is returned as a
// *[transport.Error]. When notes is not nil, it receives the
// notifications of the call (progress, log messages), in order, in the
// caller's goroutine, all before Call returns; while it is behind, the
// upstream's further notifications of the call are dropped and counted.
// When ctx ends first, Call returns [context.Cause] at once (even from a
// write blocked on an upstream that stopped reading) and the request is
// cancelled upstream in the background. When the session ends first,
// Call returns an error wrapping [ErrGone] or [ErrClosed].
//
// A 2026-07-28 upstream's input_required is answered through OnRequest
// (session_stateless.go). In both eras the result comes back as
// [WithoutEraMembers] leaves it.
func (s *Session) Call(ctx context.Context, method string, params json.RawMessage, notes *Notes) (json.RawMessage, error) {
	if s.meta != nil {
		return s.callStateless(ctx, method, params, notes)
	}
	res, err := s.call(ctx, method, params, notes)
	if err != nil {
		return nil, err
	}
	return withoutEraMembers(res), nil // a decoded message's result: valid JSON
}

// call is Call, one request and its answer.
func (s *Session) call(ctx context.Context, method string, params json.RawMessage, notes *Notes) (json.RawMessage, error) {
	id := s.ids.Add(1)
	c := &call{ctx: ctx, done: make(chan struct{})}
	if notes != nil {
		c.wants = *notes
		if notes.Progress != nil || notes.Log != nil {
			c.notes = make(chan *transport.Request, notesBuffer)
		}
	}
	if err := s.waitTurn(ctx, func(st *state) error {
		if notes != nil && notes.Progress != nil {
			c.token = st.pickToken(notes.ProgressToken, id)
			st.tokens[c.token] = id
		}
		st.calls[id] = c
		return nil
	}, c.wants); err != nil {
		return nil, err
	}
	if notes != nil {
		members := notes.Meta
		if c.token != "" {
			members = progressMember(members, c.token)
		}
		var err error
		if params, err = withMeta(params, members); err != nil {
			s.forget(id)
			return nil, err
		}
	}
	if err := s.write(ctx, &transport.Request{ID: transport.Int64ID(id), Method: method, Params: params}, notes); err != nil {
		if ctx.Err() != nil {
			if s.abandon(id) {
				// The request may have gone out (an HTTP POST waits for
				// its answer): the upstream ignores a cancel it cannot
				// match.
				s.cancelUpstream(ctx, id)
			}
			return nil, context.Cause(ctx)
		}
		s.forget(id)
		return nil, s.end(fmt.Errorf("%w: %w", ErrGone, err))
	}
	for {
		select {
		case n := <-c.notes: // nil channel without Notes: never ready
			c.hand(n)
		case <-c.done:
			return c.finish()
		case <-ctx.Done():
			if !s.abandon(id) {
				<-c.done // answered meanwhile: the answer wins
				return c.finish()
			}
			s.cancelUpstream(ctx, id)
			return nil, context.Cause(ctx)
		}
	}
}

// waitTurn runs add, which files a call with wants, once no call of
// another owner is in flight (see Notes.Owner), or returns why not: the
// session ended, or ctx did.
func (s *Session) waitTurn(ctx context.Context, add func(st *state) error, wants Notes) error {
	for {
		var freed <-chan struct{}
		var until time.Time
		if err := s.update(func(st *state) error {
			if st.err != nil {
				return st.err
			}
			if !wants.Aside {
				if freed, until = st.otherOwner(wants.Owner, time.Now()); freed != nil {
					return nil
				}
			}
			return add(st)
		}); err != nil || freed == nil {
			return err
		}
		if err := s.waitFreed(ctx, freed, until); err != nil {
			return err
		}
	}
}

// waitFreed waits until freed is closed, until passes (when not zero) or
// the session ends; it returns ctx's cause if ctx ends first.
func (s *Session) waitFreed(ctx context.Context, freed <-chan struct{}, until time.Time) error {
	var expire <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		expire = t.C
	}
	select {
	case <-freed:
	case <-expire:
	case <-s.ctx.Done():
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
}

// queue puts n among the call's notifications for its caller, unless
// they hold notesBuffer of them, or notesBytes of params already (one
// alone is let in whatever its size, which the message bound bounds); it
// reports whether it did.
func (c *call) queue(n *transport.Request) bool {
	size := int64(len(n.Params))
	if held := c.held.Add(size); held > size && held > notesBytes {
		c.held.Add(-size)
		return false
	}
	select {
	case c.notes <- n:
		return true
	default:
		c.held.Add(-size)
		return false
	}
}

// hand gives a notification of the call to its Notes.
func (c *call) hand(n *transport.Request) {
	c.held.Add(-int64(len(n.Params)))
	if n.Method == "notifications/progress" {
		c.wants.Progress(n.Params)
	} else {
		c.wants.Log(n.Params)
	}
}

// finish hands Notes what is left of the call's notifications, all of
// which arrived before its answer, and returns the answer.
func (c *call) finish() (json.RawMessage, error) {
	for {
		select {
		case n := <-c.notes:
			c.hand(n)
		default:
			return c.result, c.err
		}
	}
}

// progressMember returns members (see [Notes.Meta]) with the progress
// token (JSON) after them.
func progressMember(members []byte, token string) []byte {
	out := make([]byte, 0, len(members)+len(token)+20)
	if len(members) > 0 {
		out = append(append(out, members...), ',')
	}
	return append(append(out, `"progressToken":`...), token...)
}

// maxCallerToken bounds a caller's progress token passed upstream.
const maxCallerToken = 256

// pickToken returns the progress token of call id, as JSON: want when it
// is a JSON string or integer of at most maxCallerToken bytes that no
// call in flight carries; else id, or, when a caller's token took that,
// "vigil-<id>".
func (st *state) pickToken(want json.RawMessage, id int64) string {
	if w := string(bytes.TrimSpace(want)); w != "" && len(w) <= maxCallerToken && plainToken(w) {
		if _, taken := st.tokens[w]; !taken {
			return w
		}
	}
	own := strconv.FormatInt(id, 10)
	if _, taken := st.tokens[own]; !taken {
		return own
	}
	return `"vigil-` + own + `"`
}

// plainToken reports whether w is a JSON string or integer.
func plainToken(w string) bool {
	if w[0] == '"' {
		var s string
		return json.Unmarshal([]byte(w), &s) == nil
	}
	_, err := strconv.ParseInt(w, 10, 64)
	return err == nil
}

// drop takes call id and its progress token out of the pending ones; it
// reports whether it was there.
func (st *state) drop(id int64) (*call, bool) {
	c, found := st.calls[id]
	if found {
		delete(st.calls, id)
		if c.token != "" {
			delete(st.tokens, c.token)
		}
		st.free()
	}
	return c, found
}

// free wakes the calls waiting for their turn (see waitTurn).
func (st *state) free() {
	if st.freed != nil {
		close(st.freed)
		st.freed = nil
	}
}

// otherOwner returns, when a call of another owner than owner is in
// flight (Aside ones aside, abandoned ones until abandonedFor passed),
// the channel freed is then, and when the earliest abandoned one among
// them stops counting (zero when none is abandoned).
func (st *state) otherOwner(owner string, now time.Time) (<-chan struct{}, time.Time) {
	busy := false
	var until time.Time
	for id, c := range st.calls {
		if c.wants.Aside || c.wants.Owner == owner {
			continue
		}
		if !c.abandoned.IsZero() {
			end := c.abandoned.Add(abandonedFor)
			if !now.Before(end) {
				delete(st.calls, id)
				continue
			}
			if until.IsZero() || end.Before(until) {
				until = end
			}
		}
		busy = true
	}
	if !busy {
		return nil, time.Time{}
	}
	if st.freed == nil {
		st.freed = make(chan struct{})
	}
	return st.freed, until
}

// forget takes call id out of the pending ones; it reports whether it was
// still there (not answered, the session not ended).
func (s *Session) forget(id int64) bool {
	found := false
	_ = s.update(func(st *state) error {
		_, found = st.drop(id)
		return nil
	})
	return found
}

// abandonedFor bounds how long a call whose caller left keeps counting as
// in flight while its upstream has not answered it (see call.abandoned):
// an upstream that ignores cancels stops being waited for then.
const abandonedFor = 30 * time.Second

// abandon marks call id as left by its caller before its answer; it
// reports whether the call was still pending (not answered, the session
// not ended). The call stays in the pending ones, without its progress
// token, until the upstream answers it or abandonedFor passes: an
// upstream that goes on working on it (many ignore cancels) may still
// ask a question or log about it, which must reach no other caller.
func (s *Session) abandon(id int64) bool {
	found := false
	now := time.Now()
	_ = s.update(func(st *state) error {
		c, ok := st.calls[id]
		if !ok {
			return nil
		}
		found = true
		c.abandoned = now
		if c.token != "" {
			delete(st.tokens, c.token) // its progress is no one's
			c.token = ""
		}
		return nil
	})
	return found
}

// cancelUpstream tells the upstream that request id is cancelled, on a
// write of its own bounded by WriteTimeout (ctx has ended), in the
// background: an upstream that stops reading holds no caller past its
// context. Close waits for the goroutine, and ends a write not yet made
// (the upstream then sees the session end instead).
func (s *Session) cancelUpstream(ctx context.Context, id int64) {
	params, _ := json.Marshal(map[string]any{"requestId": id, "reason": "the caller cancelled the request"})
	live := false
	_ = s.update(func(st *state) error {
		if live = st.err == nil; live {
			s.wg.Add(1) // under the lock that end takes before Close waits
		}
		return nil
	})
	if !live {
		return
	}
	go func() {
		defer s.wg.Done()
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.WriteTimeout)
		defer cancel()
		if err := s.conn.Write(wctx, &transport.Request{Method: "notifications/cancelled", Params: params}); err != nil {
			s.log.Debug("upstream: cancel not sent", "id", id, "error", err)
		}
	}()
}

// Notify sends the notification method with params (a JSON object, or
// nil).
func (s *Session) Notify(ctx context.Context, method string, params json.RawMessage) error {
	if err := s.Err(); err != nil {
		return err
	}
	if err := s.conn.Write(ctx, &transport.Request{Method: method, Params: params}); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return s.end(fmt.Errorf("%w: %w", ErrGone, err))
	}
	return nil
}

// Done returns a channel closed when the session ends: the upstream went
// or Close was called. Err then says why.
func (s *Session) Done() <-chan struct{} { return s.ended }

// Err returns why the session ended, wrapping [ErrGone] or [ErrClosed];
// nil while it lives.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.err
}

// Stats returns the counts of what the session dropped so far.
func (s *Session) Stats() Stats {
	return Stats{
		DroppedNotifications: s.dropNotes.Load(),
		DroppedProgress:      s.dropProgress.Load(),
		LateResponses:        s.late.Load(),
		InvalidMessages:      s.invalid.Load(),
		RefusedRequests:      s.refused.Load(),
		OversizeMessages:     s.oversized.Load(),
	}
}

// Close ends the session with [ErrClosed] (unless it has ended already),
// closes its Conn, and waits for its goroutines, among them the running
// OnRequest and OnNotification calls. It must not be called from them.
func (s *Session) Close() error {
	_ = s.end(ErrClosed)
	s.wg.Wait()
	return nil
}

// update runs f under the session's lock.
func (s *Session) update(f func(st *state) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return f(&s.st)
}

// end ends the session with err, unless it has ended already, and returns
// why it ended. The pending calls are taken out of the state at once and
// answered after the lock is released: none is answered twice, and
// answering one never changes what is being iterated.
func (s *Session) end(err error) error {
	var calls map[int64]*call
	var running []func(error)
	first := false
	_ = s.update(func(st *state) error {
		if st.err != nil {
			err = st.err
			return nil
		}
		first = true
		st.err = err
		calls, st.calls, st.tokens = st.calls, nil, nil
		for _, cancel := range st.incoming {
			running = append(running, cancel)
		}
		st.incoming = nil
		st.asking = nil
		st.wakeAsked()
		return nil
	})
	if !first {
		return err
	}
	for _, c := range calls {
		c.err = err
		close(c.done)
	}
	for _, cancel := range running {
		cancel(err)
	}
	s.stop(err)
	close(s.ended)
	_ = s.conn.Close()
	if errors.Is(err, ErrGone) {
		s.log.Warn("upstream gone", "error", err, "pending", len(calls))
	}
	return err
}

// readLoop reads what the upstream sends until the session ends.
func (s *Session) readLoop() {
	for {
		msg, err := s.conn.Read(s.ctx)
		if err != nil {
			if s.readFailed(err) {
				continue
			}
			return
		}
		switch m := msg.(type) {
		case *transport.Response:
			s.answer(m)
		case *transport.Request:
			var related transport.ID
			if rel, ok := s.conn.(relater); ok {
				related, _ = rel.RelatedCall(m) // taken for every message, so that none is kept
			}
			if m.IsNotification() {
				s.notified(m, related)
			} else {
				s.requested(m, related)
			}
		default: // a batch, which no MCP version a session speaks allows
			s.invalid.Add(1)
		}
	}
}

// readFailed handles an error of the Conn's Read and reports whether the
// session reads on: a message over the bound or one that could not be
// decoded is counted and the session goes on; any other error ends it.
// It is out of readLoop so that a message read whole allocates nothing
// for the errors it did not have.
func (s *Session) readFailed(err error) bool {
	if derr, ok := errors.AsType[*transport.DecodeError](err); ok {
		if !s.oversize(derr) {
			s.invalid.Add(1)
			s.log.Debug("upstream: invalid message", "error", err)
			s.malformed(derr)
		}
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, transport.ErrPeerGone) {
		err = fmt.Errorf("%w: it closed the connection: %w", ErrGone, err)
	} else {
		err = fmt.Errorf("%w: %w", ErrGone, err)
	}
	_ = s.end(err)
	return false
}

// oversize handles a message the Conn dropped for being over its bound,
// reporting whether derr is one: the call it answers fails with a
// *TooLargeError; a request of the upstream is refused; a notification is
// dropped. Each is counted.
func (s *Session) oversize(derr *transport.DecodeError) bool {
	o, ok := errors.AsType[*oversize.Error](derr.Err)
	if !ok {
		return false
	}
	response, size, limit := o.Response, o.Size, o.Limit
	s.oversized.Add(1)
	level := slog.LevelDebug // a notification or a request: counted
	if response {
		level = slog.LevelWarn // a call failed
	}
	s.log.Log(s.ctx, level, "upstream: a message over the bound dropped", "bytes", size, "max", limit, "response", response, "id", derr.ID.String())
	switch {
	case response:
		id, ok := intID(derr.ID)
		var c *call
		if ok {
			_ = s.update(func(st *state) error {
				c, _ = st.drop(id)
				return nil
			})
		}
		if c != nil {
			c.err = &TooLargeError{Size: size, Max: limit}
			close(c.done)
		}
	case derr.ID.IsValid():
		s.reply(derr.ID, nil, &transport.Error{
			Code:    int64(protocol.CodeInvalidRequest),
			Message: fmt.Sprintf("the request is over the client's bound of %d bytes on a message", limit),
		})
	}
	return true
}

// malformed fails at once the call a message that could not be decoded
// answers, when its id could be read (a response that also has a method,
// or both result and error, or bytes that are not UTF-8, say): its caller
// gets an error that names the upstream rather than waiting for its
// deadline. A message that names no call in flight is only counted.
func (s *Session) malformed(derr *transport.DecodeError) {
	id, ok := intID(derr.ID)
	if !ok {
		return
	}
	var c *call
	_ = s.update(func(st *state) error {
		if pending := st.calls[id]; pending != nil && pending.abandoned.IsZero() {
			c, _ = st.drop(id)
		}
		return nil
	})
	if c == nil {
		return // nobody waits for it
	}
	c.err = &transport.Error{
		Code:    int64(protocol.CodeInternal),
		Message: fmt.Sprintf("upstream %s answered with a malformed message: %v", s.cfg.Name, derr.Err),
	}
	close(c.done)
}

// answer completes the call a response answers.
func (s *Session) answer(r *transport.Response) {
	id, ok := intID(r.ID)
	var c *call
	if ok {
		_ = s.update(func(st *state) error {
			c, _ = st.drop(id)
			return nil
		})
	}
	if c == nil || !c.abandoned.IsZero() {
		s.late.Add(1) // nobody waits for it
		if c == nil {
			return
		}
	}
	if r.Error != nil {
		c.err = r.Error
	} else {
		c.result = r.Result
	}
	close(c.done)
}

// intID returns the integer of an id the session could have made.
func intID(id transport.ID) (int64, bool) {
	if !id.IsValid() || id.IsString() {
		return 0, false
	}
	n, err := strconv.ParseInt(id.String(), 10, 64)
	return n, err == nil
}

// notified handles a notification of the upstream, which related names
// the call of (the zero ID when the Conn relates it to none).
func (s *Session) notified(n *transport.Request, related transport.ID) {
	switch n.Method {
	case "notifications/progress":
		s.progressed(n)
		return
	case "notifications/cancelled":
		var p struct {
			RequestID transport.ID `json:"requestId"`
		}
		if json.Unmarshal(n.Params, &p) != nil {
			s.invalid.Add(1)
			return
		}
		var cancel func(error)
		_ = s.update(func(st *state) error {
			cancel = st.incoming[p.RequestID]
			return nil
		})
		if cancel != nil {
			cancel(errUpstreamCancel)
		}
		return
	case "notifications/message":
		var c *call
		_ = s.update(func(st *state) error {
			c = st.callerOf(related)
			return nil
		})
		if c != nil && !c.abandoned.IsZero() {
			s.dropNotes.Add(1) // its caller left: no one else's
			return
		}
		if c != nil && c.wants.Log != nil {
			if !c.queue(n) {
				s.dropNotes.Add(1)
			}
			return
		}
	}
	select {
	case s.notes <- n:
	default:
		s.dropNotes.Add(1)
	}
}

// progressed hands a progress notification to the call whose token it
// carries, unless that call's caller is behind.
func (s *Session) progressed(n *transport.Request) {
	var p struct {
		Token json.RawMessage `json:"progressToken"`
	}
	if json.Unmarshal(n.Params, &p) != nil || len(p.Token) == 0 {
		s.dropProgress.Add(1)
		return
	}
	var c *call
	_ = s.update(func(st *state) error {
		if id, ok := st.tokens[string(bytes.TrimSpace(p.Token))]; ok {
			c = st.calls[id]
		}
		return nil
	})
	if c == nil || c.wants.Progress == nil {
		s.dropProgress.Add(1)
		return
	}
	if !c.queue(n) {
		s.dropProgress.Add(1)
	}
}

// deliver hands the queued notifications to OnNotification until the
// session ends.
func (s *Session) deliver() {
	for {
		select {
		case n := <-s.notes:
			if s.cfg.OnNotification != nil {
				s.cfg.OnNotification(n)
			}
		case <-s.ctx.Done():
			return
		}
	}
}

// requested starts answering a request of the upstream, or refuses it;
// related names the call it belongs to (the zero ID when the Conn relates
// it to none).
func (s *Session) requested(r *transport.Request, related transport.ID) {
	if r.Method == "ping" {
		s.reply(r.ID, json.RawMessage(`{}`), nil)
		return
	}
	if s.cfg.OnRequest == nil {
		s.reply(r.ID, nil, &transport.Error{Code: int64(protocol.CodeMethodNotFound), Message: "method not found"})
		return
	}
	var refusal *transport.Error
	var cancel context.CancelCauseFunc
	ctx := s.ctx
	_ = s.update(func(st *state) error {
		c := st.callerOf(related)
		switch {
		case c != nil && s.cfg.OneClient:
			ctx = context.WithoutCancel(c.ctx) // ends with the session, below
		case c != nil:
			ctx = c.ctx
		}
		ctx, cancel = context.WithCancelCause(ctx)
		switch {
		case st.err != nil:
			refusal = &transport.Error{Code: int64(protocol.CodeInternal), Message: "session closed"}
		case c != nil && !c.abandoned.IsZero():
			refusal = &transport.Error{Code: int64(protocol.CodeInternal), Message: "the request it belongs to was cancelled by its caller"}
		case st.incoming[r.ID] != nil:
			refusal = &transport.Error{Code: int64(protocol.CodeInvalidRequest), Message: "duplicate request id"}
		case len(st.incoming) >= s.cfg.MaxIncoming:
			refusal = &transport.Error{Code: int64(protocol.CodeServerBusy), Message: "too many requests in flight"}
		default:
			st.incoming[r.ID] = cancel
			st.asking[r.ID] = r.Method
			st.requests++
		}
		return nil
	})
	if refusal != nil {
		cancel(nil)
		if refusal.Code == int64(protocol.CodeServerBusy) {
			s.refused.Add(1)
		}
		s.reply(r.ID, nil, refusal)
		return
	}
	s.wg.Go(func() {
		defer cancel(nil)
		stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
		defer stop()
		res, err := s.cfg.OnRequest(ctx, r)
		_ = s.update(func(st *state) error {
			delete(st.incoming, r.ID)
			return nil
		})
		var jerr *transport.Error
		switch {
		case s.ctx.Err() != nil, errors.Is(context.Cause(ctx), errUpstreamCancel):
			return // the session ended, or the upstream cancelled it: no answer
		case ctx.Err() != nil:
			// The call it came with ended first. An upstream left without
			// an answer waits for it, and a node server with a request
			// timer pending does not exit at the end of its input.
			jerr = &transport.Error{Code: int64(protocol.CodeInternal), Message: "the call this request belongs to ended before its answer"}
		case errors.As(err, &jerr):
		case err != nil:
			s.log.Debug("upstream: request failed", "method", r.Method, "error", err)
			jerr = &transport.Error{Code: int64(protocol.CodeInternal), Message: "internal error"}
		case res == nil:
			res = json.RawMessage(`{}`)
		}
		s.reply(r.ID, res, jerr)
		_ = s.update(func(st *state) error {
			delete(st.asking, r.ID) // its answer is written: Settle may go on
			st.wakeAsked()
			return nil
		})
	})
}

// ping pings the upstream and waits for its answer; an error answer is
// an answer.
func (s *Session) ping(ctx context.Context) error {
	if _, err := s.Call(ctx, "ping", nil, nil); err != nil {
		if _, answered := errors.AsType[*transport.Error](err); !answered {
			return err
		}
	}
	return nil
}

// wakeAsked wakes those waiting in Settle: a request left asking.
func (st *state) wakeAsked() {
	if st.answered != nil {
		close(st.answered)
		st.answered = nil
	}
}

// Settle pings the upstream and, once it has answered, waits until each
// of its requests of method (roots/list, say) that came before that
// answer has its answer written by OnRequest: over stdio, where the
// upstream's messages come in the order it sent them, what it asked at
// once on initialized has its answer when Settle returns nil. It returns
// how many requests OnRequest took on the session so far, of any method,
// answered or not. An error answer to the ping is an answer; ctx bounds
// the whole wait, and the end of the session ends it with [Session.Err].
func (s *Session) Settle(ctx context.Context, method string) (int, error) {
	if err := s.ping(ctx); err != nil {
		return 0, err
	}
	var pending []transport.ID
	asked := 0
	_ = s.update(func(st *state) error {
		for id, m := range st.asking {
			if m == method {
				pending = append(pending, id)
			}
		}
		asked = st.requests
		return nil
	})
	for {
		var wait chan struct{}
		var gone error
		_ = s.update(func(st *state) error {
			pending = slices.DeleteFunc(pending, func(id transport.ID) bool { _, ok := st.asking[id]; return !ok })
			switch {
			case st.err != nil:
				gone = st.err
			case len(pending) > 0:
				if st.answered == nil {
					st.answered = make(chan struct{})
				}
				wait = st.answered
			}
			return nil
		})
		switch {
		case gone != nil:
			return asked, gone
		case wait == nil:
			return asked, nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return asked, context.Cause(ctx)
		}
	}
}

// write sends req, our request, with what its notes ask of an HTTP
// upstream's POST (see notedWriter).
func (s *Session) write(ctx context.Context, req *transport.Request, notes *Notes) error {
	if nw, ok := s.conn.(notedWriter); ok && notes != nil && (notes.Header != nil || notes.Polled != nil) {
		return nw.WriteNoted(ctx, req, notes.Header, notes.Polled)
	}
	return s.conn.Write(ctx, req)
}

// The hooks of the Conn of an HTTP upstream (streamable.Dial), which it
// exports outside the API for this package alone.
type (
	// directAnswers is what a Conn that can hand an answer to the session
	// itself, without Read, implements: f is called for each answer to
	// one of our requests that no other message must precede.
	directAnswers interface {
		AnswerDirectly(f func(*transport.Response))
	}
	// relater is what a Conn that knows which of our requests an
	// upstream message belongs to implements (the POST stream it came
	// on): RelatedCall returns, once, the id of that request.
	relater interface {
		RelatedCall(m *transport.Request) (transport.ID, bool)
	}
	// notedWriter is what a Conn that sends a request's Notes.Header and
	// calls its Notes.Polled implements.
	notedWriter interface {
		WriteNoted(ctx context.Context, msg transport.Message, header http.Header, polled func()) error
	}
)

// callerOf returns the pending call an upstream request belongs to: the
// one related names (the zero ID when the Conn relates it to none), else
// the only one in flight; nil when none.
func (st *state) callerOf(related transport.ID) *call {
	if related.IsValid() {
		if n, ok := intID(related); ok {
			return st.calls[n]
		}
		return nil
	}
	var only *call
	now := time.Now()
	for id, c := range st.calls {
		if !c.abandoned.IsZero() && now.Sub(c.abandoned) > abandonedFor {
			delete(st.calls, id) // its upstream never answered: waited for long enough
			st.free()
			continue
		}
		if c.wants.Aside {
			continue
		}
		if only != nil {
			return nil
		}
		only = c
	}
	return only
}

// reply answers the upstream's request id, on a write bounded by
// WriteTimeout.
func (s *Session) reply(id transport.ID, result json.RawMessage, e *transport.Error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.WriteTimeout)
	defer cancel()
	if err := s.conn.Write(ctx, &transport.Response{ID: id, Result: result, Error: e}); err != nil {
		s.log.Debug("upstream: answer not sent", "id", id.String(), "error", err)
	}
}
