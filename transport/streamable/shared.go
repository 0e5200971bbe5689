package streamable

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The shared mode of an Endpoint (see Cluster): a replica holds a view of a
// session, a session of its own on top of the cluster's record, only while
// the session is busy there; the view is evicted when it has been idle for
// the view timeout, without ending the session.

// defaultViewIdle is how long a replica keeps the view of a session that
// has nothing in flight there.
const defaultViewIdle = 30 * time.Second

// Cluster is the replicas an Endpoint shares its 2025-era sessions with
// ([WithCluster]). Replica names this replica. The rest of the contract is
// Vigil's replication protocol (session records, relays, forwarded
// requests), which is internal to Vigil and may change in any release:
// package redisshare makes the implementation (Shared.Options), on Redis.
type Cluster interface {
	Replica() string
}

// WithCluster shares the Endpoint's 2025-era sessions with the other
// replicas of c: any replica serves any request of any session, and the
// sessions outlive the replica that created them. New hands c the idle
// and init timeouts ([WithIdleTimeout], [WithInitTimeout]), after which
// the cluster's records expire (30 minutes when sessions never idle
// out, so that a dead replica's records go); a replica keeps its
// view of a session for 30 s after its last request there, unless c says
// otherwise. For resumable streams that any replica can resume, give the
// replicas one shared event store too ([WithEventStore]). Package
// redisshare's Shared.Options wires both. WithCluster panics when c does
// not implement Vigil's replication protocol: a c made by anything else.
func WithCluster(c Cluster) Option {
	var rc replication.Config
	switch v := c.(type) {
	case replication.Config:
		rc = v
	case replication.Cluster:
		rc = replication.Config{Cluster: v}
	default:
		panic(fmt.Sprintf("streamable: WithCluster: %T does not implement Vigil's replication protocol: make the cluster with package redisshare", c))
	}
	return optionFunc(func(cfg *config) {
		cfg.cluster = rc.Cluster
		cfg.viewIdle = rc.ViewIdle
		if rc.ViewIdle <= 0 {
			cfg.viewIdle = defaultViewIdle
		}
		cfg.onLost = rc.OnRequestLost
		cfg.onRelayRefuse = rc.OnRelayRefused
	})
}

// view is what a shared session has besides a session: the cluster's
// record state it was loaded with, the server's state update function,
// the subscription to the session's relays, and the streams of other
// replicas it resumes.
type view struct {
	ready       chan struct{} // closed once the server serves the view: requests wait for it
	cluster     replication.Cluster
	unsubscribe func()       // guarded by mu; see stopRelays
	touched     atomic.Int64 // unix nanoseconds of the last Touch
	applyMu     sync.Mutex   // serializes the calls of update: the last applied is the newest (shared_state.go)

	mu    sync.Mutex
	tails map[string]chan struct{} // stream key → wake-up of the resumption carrying it here
	holds int                      // Holds not released: work of the session running here

	// The session's state (shared_state.go), guarded by mu.
	state     []byte                         // the newest state known here
	fresh     bool                           // state came by relay after SharedState read it
	relayed   bool                           // a state came by relay since the view followed the session
	update    func(state []byte)             // the server's, once it serves the view
	stateWait []*seenWait                    // StoreStates waiting for the other replicas
	endWait   []*seenWait                    // DELETEs waiting for the other replicas (shared_end.go)
	ownStates map[[sha256.Size]byte]ownState // states stored here whose relay has not come back
}

// sharedConn is the Conn a server serves a shared session on: the session,
// and transport.Shared.
type sharedConn struct{ *session }

var (
	_ transport.Shared = sharedConn{}
	_ transport.Driven = sharedConn{}
)

// Replica returns the cluster's name of this replica.
func (c sharedConn) Replica() string { return c.view.cluster.Replica() }

// Hold keeps the view: it is not evicted while held (see busy).
func (c sharedConn) Hold() (release func()) {
	v := c.view
	v.mu.Lock()
	v.holds++
	v.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			v.mu.Lock()
			v.holds--
			v.mu.Unlock()
		})
	}
}

// serverConn returns the Conn the server serves s on.
func (s *session) serverConn() transport.Driven {
	if s.view != nil {
		return sharedConn{s}
	}
	return s
}

// create stores the record of s, a new session, and subscribes to its
// relays; false: the cluster cannot, and s is not served.
func (h *Endpoint) create(ctx context.Context, s *session) error {
	if err := h.cfg.cluster.Create(ctx, s.id, replication.SessionRecord{Principal: s.principal}); err != nil {
		return err
	}
	return s.subscribe(ctx)
}

// newView returns the view of a session being made, with the session's
// shared state (nil for a new one), touched now; newSession sets it before
// the expiry, whose view timeout reads it, has the session.
func newView(cluster replication.Cluster, state []byte) *view {
	v := &view{cluster: cluster, state: state, ready: make(chan struct{})}
	v.touched.Store(time.Now().UnixNano())
	return v
}

// subscribe has s follow its session's relays.
func (s *session) subscribe(ctx context.Context) error {
	cancel, err := s.view.cluster.Subscribe(ctx, s.id, s.relay)
	if err != nil {
		return err
	}
	v := s.view
	v.mu.Lock()
	v.unsubscribe = cancel
	v.mu.Unlock()
	select {
	case <-s.done: // ended meanwhile (the replica is leaving): terminate found nothing to stop
		v.stopRelays()
	default:
	}
	return nil
}

// stopRelays ends the view's subscription, once, if it has one.
func (v *view) stopRelays() {
	v.mu.Lock()
	cancel := v.unsubscribe
	v.unsubscribe = nil
	v.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// loadView makes a view of the session id, which another replica created,
// when the cluster has it and it is r's principal's; else it returns the
// reason and HTTP status to refuse r with.
func (h *Endpoint) loadView(id string, r *http.Request) (*session, protocol.RejectReason, int) {
	rec, err := h.cfg.cluster.Load(r.Context(), id)
	switch {
	case errors.Is(err, ErrUnknownSession):
		return nil, protocol.RejectUnknownSession, http.StatusNotFound
	case err != nil:
		h.cfg.logger.Warn("streamable: cannot load a shared session", "session", id, "error", err)
		return nil, protocol.RejectOther, http.StatusServiceUnavailable
	case rec.Principal != h.principalOf(r):
		return nil, protocol.RejectSessionPrincipal, http.StatusNotFound
	}
	h.mu.Lock()
	if s := h.sessions[id]; s != nil { // another request made it meanwhile
		h.mu.Unlock()
		return s, 0, 0
	}
	if h.closed || len(h.sessions) >= h.cfg.maxSessions {
		h.mu.Unlock()
		return nil, protocol.RejectSessionLimit, http.StatusServiceUnavailable
	}
	s := newSession(h, id, rec.Principal, h.attach != nil, newView(h.cfg.cluster, rec.State))
	ctx := withSession(context.WithoutCancel(r.Context()), s)
	h.sessions[id] = s
	h.serving.Add(1)
	h.mu.Unlock()
	if err := s.subscribe(r.Context()); err != nil {
		h.cfg.logger.Warn("streamable: cannot follow a shared session", "session", id, "error", err)
		h.evict(s)
		close(s.view.ready)
		h.serving.Done()
		return nil, protocol.RejectOther, http.StatusServiceUnavailable
	}
	if rec, err := h.cfg.cluster.Load(r.Context(), id); err == nil { // again, now that relays come: see followState
		s.view.followState(rec.State)
	}
	h.serve(ctx, s)
	close(s.view.ready)
	return s, 0, 0
}

// whenReady waits until the server serves the view s, which another
// request may still be making; false if r's client left first.
func (s *session) whenReady(r *http.Request) bool {
	select {
	case <-s.view.ready:
		return true
	case <-r.Context().Done():
		return false
	}
}

// evict drops the view s without ending its session.
func (h *Endpoint) evict(s *session) {
	h.mu.Lock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
	h.mu.Unlock()
	s.terminate(errEvicted)
}

var errEvicted = fmt.Errorf("streamable: the replica let its view of the shared session go: %w", transport.ErrReleased)

// expireView evicts a view that has been idle for the view timeout, unless
// something is still in flight on it; the session's record expires in the
// cluster.
func (h *Endpoint) expireView(s *session) {
	if s.busy() {
		h.expiry.add(s) // again, from now
		return
	}
	h.evict(s)
}

// busy reports whether s has a request, a stream, a resumption or a hold
// (sharedConn.Hold) open.
func (s *session) busy() bool {
	s.mu.Lock()
	n := len(s.streams)
	if s.get != nil {
		n++
	}
	s.mu.Unlock()
	if rs := s.res; rs != nil {
		rs.mu.Lock()
		n += len(rs.byKey) + rs.getServing
		rs.mu.Unlock()
	}
	if v := s.view; v != nil {
		select {
		case <-v.ready:
		default:
			n++ // still being made: its first request is on its way
		}
		v.mu.Lock()
		n += len(v.tails) + v.holds
		v.mu.Unlock()
	}
	return n > 0
}

// touchShared restarts the idle clock of the session's record, at most
// once a tenth of the idle timeout (of replication.NeverIdleTTL, the
// record's life, when sessions never idle out), and reports whether the
// record is still there. When the cluster says it is gone (the session was deleted
// while this replica missed the end's relay, its subscription down, or
// it expired), the view ends here too (shared_end.go).
func (s *session) touchShared(ctx context.Context) bool {
	v := s.view
	d := s.h.cfg.idleTimeout
	if d <= 0 {
		d = replication.NeverIdleTTL
	}
	d /= 10
	now := time.Now().UnixNano()
	last := v.touched.Load()
	if now-last < int64(d) || !v.touched.CompareAndSwap(last, now) {
		return true
	}
	err := v.cluster.Touch(context.WithoutCancel(ctx), s.id)
	switch {
	case errors.Is(err, ErrUnknownSession):
		s.h.cfg.logger.Info("streamable: a shared session's record is gone; its view here ends", "session", s.id)
		s.endView(errSessionGone)
		return false
	case err != nil:
		s.h.cfg.logger.Warn("streamable: cannot renew a shared session", "session", s.id, "error", err)
	default:
		s.h.refreshShared(ctx, s)
	}
	return true
}

// renewShared restarts the idle clock of the session's record at once: a
// record lives for the init timeout only until its client initialized
// (see replication.Expiring).
func (s *session) renewShared(ctx context.Context) {
	v := s.view
	v.touched.Store(time.Now().UnixNano())
	if err := v.cluster.Touch(context.WithoutCancel(ctx), s.id); err != nil && !errors.Is(err, ErrUnknownSession) {
		s.h.cfg.logger.Warn("streamable: cannot renew a shared session", "session", s.id, "error", err)
	}
}

// publish sends a relay of kind to the session's other replicas.
func (s *session) publish(ctx context.Context, kind replication.RelayKind, data []byte) error {
	v := s.view
	err := v.cluster.Publish(context.WithoutCancel(ctx), s.id, replication.Relay{Kind: kind, From: v.cluster.Replica(), Data: data})
	if err != nil {
		s.h.cfg.logger.Warn("streamable: cannot relay a message to the other replicas", "session", s.id, "kind", kind.String(), "error", err)
	}
	return err
}

// relayClient passes a message the client posted here on to the replicas
// that may wait for it: a response or a notification, never a request,
// which runs here (see clientRelayable).
func (s *session) relayClient(ctx context.Context, m transport.Message) error {
	if !clientRelayable(m) {
		return errors.New("streamable: a request is never relayed")
	}
	data, err := transport.AppendMessage(nil, m)
	if err != nil {
		return err
	}
	return s.publish(ctx, replication.RelayClient, data)
}

// relay acts on a relay of the session's from another replica.
func (s *session) relay(r replication.Relay) {
	v := s.view
	if r.From == v.cluster.Replica() {
		if r.Kind == replication.RelayState {
			v.ownStateBack(r.Data) // shared_state.go
		}
		return
	}
	switch r.Kind {
	case replication.RelayClient:
		m, err := transport.DecodeMessage(r.Data)
		if err != nil {
			return
		}
		if !clientRelayable(m) {
			// No replica relays a request: one here would run in the
			// session with no principal of its own (forged, or a bug).
			s.h.relayRefused(relayRefusedRequest)
			return
		}
		if req, ok := m.(*transport.Request); ok && req.Method == "notifications/cancelled" {
			s.markCancelled(req)
		}
		if s.res != nil {
			s.res.observe(m) // before the handler can end: see resumer.handled
		}
		s.deliverInline(context.WithValue(context.Background(), relayedKey{}, true), m) // see StoreState
	case replication.RelayStandalone:
		m, err := transport.DecodeMessage(r.Data)
		if err != nil {
			return
		}
		_ = s.writeStandaloneHere(context.Background(), m)
	case replication.RelayEvent:
		v.mu.Lock()
		wake := v.tails[string(r.Data)]
		v.mu.Unlock()
		if wake != nil {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	case replication.RelayState:
		s.stateRelayed(r.Data)
	case replication.RelayStateSeen:
		v.stateSeenBy(r.From, r.Data)
	case replication.RelayEnd:
		s.endRelayed() // shared_end.go
	case replication.RelayEndSeen:
		v.endSeenBy(r.From)
	}
}

// relayRefusedRequest is the OnRelayRefused reason (replication.Config) of
// a RelayClient that is not a response or a notification.
const relayRefusedRequest = "request"

// clientRelayable reports whether m may travel as a RelayClient: a response
// (the client's answer to a server request) or a notification. A request,
// or a batch that may hold one, is not.
func clientRelayable(m transport.Message) bool {
	switch m := m.(type) {
	case *transport.Response:
		return true
	case *transport.Request:
		return m.IsNotification()
	}
	return false
}

// relayRefused counts a relay refused for reason
// (replication.Config.OnRelayRefused).
func (h *Endpoint) relayRefused(reason string) {
	if f := h.cfg.onRelayRefuse; f != nil {
		f(reason)
	}
}

// writeStandaloneHere writes m to the standalone GET stream if this
// replica carries it; ErrStreamGone otherwise.
func (s *session) writeStandaloneHere(ctx context.Context, m transport.Message) error {
	if rs := s.res; rs != nil {
		rs.mu.Lock()
		ls := rs.standalone
		rs.mu.Unlock()
		if ls == nil || !ls.carried() {
			return fmt.Errorf("streamable: write: no standalone stream here: %w", transport.ErrStreamGone)
		}
		return rs.send(ctx, ls, m)
	}
	s.mu.Lock()
	get := s.get
	s.mu.Unlock()
	if get == nil {
		return fmt.Errorf("streamable: write: no standalone stream here: %w", transport.ErrStreamGone)
	}
	return get.deliver(m)
}

// standaloneLogical stands for the standalone stream where none is open.
var standaloneLogical = &logical{}

// forStandalone reports whether route sends m to the standalone stream.
func forStandalone[S comparable](ctx context.Context, m transport.Message, mode ResponseMode, byRequest map[transport.ID]S, standalone S) bool {
	return route(ctx, m, mode, byRequest, standalone) == standalone
}

// relayStandalone sends a message for the standalone stream, which this
// replica does not carry, to the replica that does, if any.
func (s *session) relayStandalone(ctx context.Context, m transport.Message) error {
	data, err := transport.AppendMessage(nil, m)
	if err != nil {
		return err
	}
	return s.publish(ctx, replication.RelayStandalone, data)
}

// Stream keys of a shared session name the replica that issued them and
// the kind of stream, so that they are unique across replicas and another
// replica can resume them: r<replica>.<n>.<id> for a request's stream, id
// the request's id in JSON, base64url; g<replica>.<n> for a standalone
// stream.
const (
	keyRequest    = 'r'
	keyStandalone = 'g'
)

// sharedKey returns a shared session's stream key.
func sharedKey(kind byte, replica, n string, req transport.ID) string {
	key := string(kind) + replica + "." + n
	if kind == keyRequest {
		id, _ := req.MarshalJSON() // never fails
		key += "." + base64.RawURLEncoding.EncodeToString(id)
	}
	return key
}

// parseRequestKey returns the replica and the request of a shared
// session's request stream key.
func parseRequestKey(key string) (replica string, req transport.ID, ok bool) {
	if key == "" || key[0] != keyRequest {
		return "", req, false
	}
	parts := strings.Split(key[1:], ".")
	if len(parts) != 3 {
		return "", req, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || req.UnmarshalJSON(raw) != nil || !req.IsValid() {
		return "", transport.ID{}, false
	}
	return parts[0], req, true
}

// isStandaloneKey reports whether a shared session's stream key names a
// standalone stream.
func isStandaloneKey(key string) bool {
	return key != "" && key[0] == keyStandalone && strings.Contains(key, ".")
}

// watchTail registers a resumption carrying another replica's stream key
// here, and returns its wake-up channel and the function that ends it.
func (v *view) watchTail(key string) (<-chan struct{}, func()) {
	wake := make(chan struct{}, 1)
	v.mu.Lock()
	if v.tails == nil {
		v.tails = make(map[string]chan struct{})
	}
	v.tails[key] = wake
	v.mu.Unlock()
	return wake, func() {
		v.mu.Lock()
		if v.tails[key] == wake {
			delete(v.tails, key)
		}
		v.mu.Unlock()
	}
}

// tailPoll is how often a resumption of another replica's stream reads the
// store when no relay woke it: relays are not stored, so one can be missed.
const tailPoll = time.Second

// tail serves the resumption of a request stream that another replica
// serves: it sends the events stored after lastID, then those the replica
// stores, until the request's response. events are those already replayed.
// When the replica is gone (its lease expired), the request is answered
// here with a "server instance lost" error, stored as the stream's last
// event, and counted, by whichever replica claims it first.
// c is the GET's admission (see admit): a newer resumption of the same
// stream ends this one.
func (rs *resumer) tail(w http.ResponseWriter, r *http.Request, key, lastID string, events []Event, c *carrier) {
	s := rs.s
	wake, done := s.view.watchTail(key)
	defer done()
	st := newStream(w, ResponseSSE, nil, s.idHeader, &s.h.limit)
	defer st.shutDown(nil)
	last := lastOf(events, lastID)
	if st.replay(events) != nil || answers(events) {
		return
	}
	tick := time.NewTicker(tailPoll)
	defer tick.Stop()
	checked := false // the owner's lease, checked on the first round too
	for {
		if checked {
			select {
			case <-wake:
			case <-tick.C:
				rs.answerIfLost(r.Context(), key)
			case <-r.Context().Done():
				return
			case <-c.stop:
				return // a newer resumption of the stream carries it
			case <-s.done:
				return
			case <-s.h.drained:
				return // the client resumes on another replica, from its last event
			}
		} else {
			checked = true
			rs.answerIfLost(r.Context(), key)
		}
		_, more, err := rs.store.Replay(r.Context(), s.id, last)
		if err != nil {
			return
		}
		if st.replay(more) != nil || answers(more) {
			return
		}
		last = lastOf(more, last)
	}
}

// answers reports whether events hold a response: the end of a request's
// stream.
func answers(events []Event) bool {
	for _, ev := range events {
		if len(ev.Data) == 0 {
			continue
		}
		if m, err := transport.DecodeMessage(ev.Data); err == nil {
			if _, ok := m.(*transport.Response); ok {
				return true
			}
		}
	}
	return false
}

// answerIfLost answers the request of the stream key with a "server
// instance lost" error when the replica serving it is gone, unless
// another replica did.
func (rs *resumer) answerIfLost(ctx context.Context, key string) {
	s := rs.s
	leases, ok := s.view.cluster.(replication.Leases)
	if !ok {
		return
	}
	replica, id, ok := parseRequestKey(key)
	if !ok {
		return
	}
	if alive, err := leases.Alive(ctx, replica); err != nil || alive {
		return
	}
	if first, err := leases.Claim(ctx, s.id, "lost:"+key); err != nil || !first {
		return
	}
	lost := &transport.Response{ID: id, Error: &transport.Error{
		Code:    int64(protocol.CodeServerBusy),
		Message: "server instance lost: the replica serving the request (" + replica + ") is gone",
	}}
	data, err := transport.AppendMessage(nil, lost)
	if err != nil {
		return
	}
	if _, err := rs.store.Append(ctx, s.id, key, data); err != nil {
		s.h.cfg.logger.Warn("streamable: cannot answer a request its replica lost", "session", s.id, "replica", replica, "error", err)
		return
	}
	s.h.cfg.logger.Info("streamable: answered a request its replica lost", "session", s.id, "replica", replica, "request", id.String())
	if s.h.cfg.onLost != nil {
		s.h.cfg.onLost()
	}
	_ = s.publish(ctx, replication.RelayEvent, []byte(key))
}

// Drain begins a replica's clean exit from a cluster (a rolling deploy, a
// scale-down): from now on the Endpoint admits no request (503 with
// Retry-After, which a load balancer retries on another replica), and it
// hands the standalone GET streams it carries back to their clients, after
// the stream's retry field, so that they resume them with Last-Event-ID on
// another replica. The requests running here go on until the server's
// shutdown grace ends; Close then hands back the streams of those still
// running, which another replica answers once this one's lease is gone.
// Sessions go on. Call it, then the server's Shutdown, then Close. Without
// a cluster it only stops admitting.
func (h *Endpoint) Drain() {
	h.draining.Store(true)
	h.drainOnce.Do(func() { close(h.drained) }) // ends the resumptions carried here (tail)
	h.handBack(true)
}

// handBack ends the HTTP responses carrying the resumable streams of every
// session here (only the standalone ones: standaloneOnly) without ending
// the streams: their clients resume them elsewhere.
func (h *Endpoint) handBack(standaloneOnly bool) {
	h.mu.Lock()
	sessions := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		sessions = append(sessions, s)
	}
	h.mu.Unlock()
	for _, s := range sessions {
		if s.res != nil {
			s.res.handBack(standaloneOnly)
		}
	}
}

// handBack ends the HTTP responses carrying the session's streams (see
// Endpoint.handBack).
func (rs *resumer) handBack(standaloneOnly bool) {
	rs.mu.Lock()
	streams := make([]*logical, 0, len(rs.byKey))
	for _, ls := range rs.byKey {
		if !standaloneOnly || !ls.req.IsValid() {
			streams = append(streams, ls)
		}
	}
	rs.mu.Unlock()
	for _, ls := range streams {
		ls.mu.Lock()
		conn := ls.conn
		if conn != nil && !ls.primed {
			rs.primeLocked(context.Background(), ls) // an id to resume from
		}
		if conn != nil && ls.primed {
			ls.conn = nil
			conn.end()
		}
		ls.mu.Unlock()
	}
}
