package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Resource subscriptions are each caller's, made where its calls go: a
// session's resources/subscribe and resources/unsubscribe are forwarded
// on its own upstream session (the listing one's for a Shared upstream),
// and a resource updated there is told to that session alone (a list
// changed there has the upstream listed again: sessionNotified). A 2026-07-28 caller's
// subscriptions/listen naming resources is followed on the upstream's
// 2026-07-28 session, where those callers' calls go, by a listen stream
// of the gateway's (one per URIs not yet followed), or, in front of an
// upstream that speaks only the 2025 era, by resources/subscribe on the
// listing session; their updates reach the listen streams that name them.

// maxSubscriptions bounds the resources the gateway follows for listen
// streams, and for a Shared upstream's sessions, on one upstream session.
const maxSubscriptions = 1000

// listenAckWithin bounds the wait for the upstream's acknowledgement of a
// listen stream of the gateway's, before the caller's is acknowledged.
const listenAckWithin = 5 * time.Second

// subscriptions is what a mount follows for more than one caller.
type subscriptions struct {
	mu sync.Mutex
	// shared are the URIs subscribed to on the listing session shared
	// (catalogOn) for a Shared upstream's sessions or for listen streams
	// of a 2025 upstream; listened are those listen streams wanted, kept
	// when the last session unsubscribes.
	shared, listened map[string]bool
	catalogOn        *upstream.Session
	era              map[string]bool // the URIs a listen stream of the gateway's names on eraOn
	eraOn            *upstream.Session
	acks             map[string]chan struct{} // listen streams of the gateway's opened, waiting for their ack, by ackKey
}

// subscriber is the gateway's server.ResourceSubscriber.
type subscriber struct{ g *Gateway }

// Subscribe forwards a session's resources/subscribe to the upstream that
// serves uri.
func (sb subscriber) Subscribe(ctx context.Context, uri string) error {
	for _, m := range sb.g.mountsOf(uri) {
		if err := m.subscribe(ctx, uri); !notFound(err) {
			return err
		}
	}
	return nil
}

// Unsubscribe forwards a session's resources/unsubscribe to the upstream
// that serves uri.
func (sb subscriber) Unsubscribe(ctx context.Context, uri string) error {
	for _, m := range sb.g.mountsOf(uri) {
		if err := m.unsubscribe(ctx, uri); !notFound(err) {
			return err
		}
	}
	return nil
}

// Listen follows the resources a listen stream names on the upstreams
// that serve them.
func (sb subscriber) Listen(ctx context.Context, uris []string) {
	byMount := map[*mount][]string{}
	for _, uri := range uris {
		for _, m := range sb.g.mountsOf(uri) {
			byMount[m] = append(byMount[m], uri)
		}
	}
	for _, m := range sb.g.mounts {
		if len(byMount[m]) > 0 {
			m.listenFor(ctx, byMount[m])
		}
	}
}

// mountsOf returns the upstreams that may serve uri: the one that lists
// it, else every one that declares resources (a template's resource).
func (g *Gateway) mountsOf(uri string) []*mount {
	g.mu.Lock()
	defer g.mu.Unlock()
	var readable []*mount
	for _, m := range g.mounts {
		if m.cat != nil && slices.ContainsFunc(m.cat.resources, func(r server.Resource) bool { return r.URI == uri }) {
			return []*mount{m}
		}
		if m.readable.Load() {
			readable = append(readable, m)
		}
	}
	return readable
}

// declaresSubscribe reports whether the upstream session s declared
// resource subscriptions.
func declaresSubscribe(s *upstream.Session) bool {
	var caps struct {
		Resources struct {
			Subscribe bool `json:"subscribe"`
		} `json:"resources"`
	}
	return json.Unmarshal(s.Initialized().Capabilities, &caps) == nil && caps.Resources.Subscribe
}

// subscribes reports whether the upstream declares resource
// subscriptions, as far as its listing session says (true before it has
// one: the call finds out).
func (m *mount) subscribes() bool {
	s := m.catalog.live()
	return s == nil || declaresSubscribe(s)
}

// uriParams returns the params of resources/subscribe and unsubscribe.
func uriParams(uri string) map[string]string { return map[string]string{"uri": uri} }

// subscribe forwards a session's resources/subscribe of uri where its
// calls go.
func (m *mount) subscribe(ctx context.Context, uri string) error {
	req := server.RequestFromContext(ctx)
	if req == nil || !req.InSession() || !m.subscribes() {
		return nil
	}
	if m.up.Shared {
		m.subs.mu.Lock()
		full := !m.subs.shared[uri] && len(m.subs.shared) >= maxSubscriptions
		m.subs.mu.Unlock()
		if full {
			return server.Errorf(protocol.CodeInvalidParams, "upstream %s: the gateway follows %d subscriptions on it at most", m.up.Name, maxSubscriptions)
		}
	}
	if _, err := m.forward(ctx, "resources/subscribe", uriParams(uri), nil); err != nil {
		if unsupported(err) {
			return nil // its session did not declare subscriptions: held here, never updated
		}
		return err
	}
	if m.up.Shared {
		m.subs.mu.Lock()
		if m.subs.shared == nil {
			m.subs.shared = map[string]bool{}
		}
		m.subs.shared[uri] = true
		m.subs.mu.Unlock()
	}
	return nil
}

// unsubscribe forwards a session's resources/unsubscribe of uri where its
// calls go, when its upstream session lives; on a Shared upstream, once
// no other session and no listen stream wants uri.
func (m *mount) unsubscribe(ctx context.Context, uri string) error {
	req := server.RequestFromContext(ctx)
	if req == nil || !req.InSession() || !m.subscribes() {
		return nil
	}
	if m.up.Shared {
		if m.catalog.live() == nil || m.wantedElsewhere(req.Session, uri) {
			return nil
		}
		m.subs.mu.Lock()
		delete(m.subs.shared, uri)
		m.subs.mu.Unlock()
	} else {
		m.mu.Lock()
		l := m.sessions[req.Session]
		m.mu.Unlock()
		if l == nil || l.live() == nil {
			return nil // gone, and its subscriptions with it
		}
	}
	if _, err := m.forward(ctx, "resources/unsubscribe", uriParams(uri), nil); err != nil && !unsupported(err) {
		return err
	}
	return nil
}

// unsupported reports whether err is an upstream's answer that it has no
// such method.
func unsupported(err error) bool {
	var se *server.Error
	return errors.As(err, &se) && se.Code == protocol.CodeMethodNotFound
}

// wantedElsewhere reports whether a listen stream, or a session other
// than ss, still wants the updates of uri on the listing session.
func (m *mount) wantedElsewhere(ss *server.Session, uri string) bool {
	m.subs.mu.Lock()
	listened := m.subs.listened[uri]
	m.subs.mu.Unlock()
	if listened {
		return true
	}
	for _, other := range m.g.srv.Sessions() {
		if other != ss && other.Subscribed(uri) {
			return true
		}
	}
	return false
}

// resubscribe subscribes again, on s, a new upstream session of a link,
// to the URIs its users subscribed to on the one before (a restart): a
// downstream session's (of ss), or the listing session's shared ones.
func (m *mount) resubscribe(ctx context.Context, s *upstream.Session, ss *server.Session) {
	if !declaresSubscribe(s) {
		return
	}
	var uris []string
	if ss != nil {
		uris = ss.Subscriptions()
	} else {
		m.subs.mu.Lock()
		m.subs.catalogOn = s
		for uri := range m.subs.shared {
			uris = append(uris, uri)
		}
		m.subs.mu.Unlock()
	}
	for _, uri := range uris {
		params, _ := json.Marshal(uriParams(uri)) // a string map encodes
		if _, err := s.Call(ctx, "resources/subscribe", params, nil); err != nil {
			m.log.Debug("gateway: subscribing again failed", "upstream", m.up.Name, "uri", uri, "error", err)
		}
	}
}

// sessionNotified handles what the upstream session of the downstream
// session ss says outside its calls. A resource ss subscribed to was
// updated: told to ss alone. A list changed: what ss lists is the
// catalog the listing session lists (and its tool view), so the upstream
// is listed again there as after the listing session's own list_changed
// (notified: at most once per relistEvery, a storm costing one listing a
// second), and ss, as every session, is told only when what is
// registered changed (catalog_diff.go): an upstream that says its lists
// changed when they did not tells its caller nothing, and one that tells
// only the session whose call changed its lists (a global list changed
// through one session) has every caller told.
func (m *mount) sessionNotified(ss *server.Session, n *transport.Request) {
	switch n.Method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		m.notified(n)
	case "notifications/resources/updated":
		if uri := updatedURI(n); uri != "" && ss.Subscribed(uri) {
			_ = ss.Notify(m.ctx, n.Method, uriParams(uri))
		}
	default:
		m.unrouted()
	}
}

// updatedURI returns the uri of a notifications/resources/updated, or "".
func updatedURI(n *transport.Request) string {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(n.Params, &p) != nil {
		return ""
	}
	return p.URI
}

// sharedUpdated tells of uri's update, said by the listing session: to
// the sessions subscribed to it when that session serves them all
// (Shared), and to the listen streams that name it when that session
// serves 2026-07-28 callers (an upstream of the 2025 era only).
func (m *mount) sharedUpdated(uri string) {
	if m.up.Shared {
		for _, ss := range m.g.srv.Sessions() {
			if ss.Subscribed(uri) {
				_ = ss.Notify(m.ctx, "notifications/resources/updated", uriParams(uri))
			}
		}
	}
	m.subs.mu.Lock()
	listened := m.subs.listened[uri]
	m.subs.mu.Unlock()
	if listened {
		m.g.srv.NotifyListeners("notifications/resources/updated", uri)
	}
}

// eraNotified handles what the 2026-07-28 session says outside its calls,
// for the 2026-07-28 callers whose calls go there: a list changed is told
// to their listen streams at once (and listed again, relist), a resource
// updated to the listen streams that name it.
func (m *mount) eraNotified(n *transport.Request) {
	switch n.Method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		m.g.srv.NotifyListeners(n.Method, "")
		m.staleEra.Store(true)
		m.notified(n)
	case "notifications/resources/updated":
		if uri := updatedURI(n); uri != "" {
			m.g.srv.NotifyListeners(n.Method, uri)
		}
	case "notifications/subscriptions/acknowledged":
		m.acknowledged(n)
	default:
		m.unrouted()
	}
}

// acknowledged ends the wait for the listen stream of the gateway's that
// the upstream acknowledged with n: the one naming the URIs it honored,
// else (it honored fewer) each naming them all. The gateway's stream of
// list changes (listenEra) asks for no resource, and waits for nothing.
func (m *mount) acknowledged(n *transport.Request) {
	var p struct {
		Notifications struct {
			Tools     bool     `json:"toolsListChanged"`
			Prompts   bool     `json:"promptsListChanged"`
			Resources bool     `json:"resourcesListChanged"`
			URIs      []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	if json.Unmarshal(n.Params, &p) != nil {
		return
	}
	f := p.Notifications
	if f.Tools || f.Prompts || f.Resources {
		return // listenEra's
	}
	m.subs.mu.Lock()
	defer m.subs.mu.Unlock()
	if key := ackKey(f.URIs); m.subs.acks[key] != nil {
		close(m.subs.acks[key])
		delete(m.subs.acks, key)
		return
	}
	for key, ch := range m.subs.acks {
		if names := strings.Split(key, "\n"); !slices.ContainsFunc(f.URIs, func(u string) bool { return !slices.Contains(names, u) }) {
			close(ch)
			delete(m.subs.acks, key)
		}
	}
}

// ackKey names a listen stream of the gateway's by the URIs it names.
func ackKey(uris []string) string {
	return strings.Join(slices.Sorted(slices.Values(uris)), "\n")
}

// listenFor follows the resources uris of a 2026-07-28 caller's listen
// stream: on the 2026-07-28 session, with a listen stream of the
// gateway's naming those not followed yet, acknowledged before it
// returns; on the listing session, by resources/subscribe, in front of an
// upstream of the 2025 era only.
func (m *mount) listenFor(ctx context.Context, uris []string) {
	s, _ := m.eraSession(ctx)
	if s != nil {
		if ack := m.listenEraFor(s, uris); ack != nil {
			wait := time.NewTimer(listenAckWithin)
			defer wait.Stop()
			select {
			case <-ack:
			case <-wait.C:
			case <-ctx.Done():
			}
		}
		return
	}
	s, err := m.catalog.session(ctx)
	if err != nil || !declaresSubscribe(s) {
		return
	}
	for _, uri := range uris {
		m.subs.mu.Lock()
		known := m.subs.shared[uri] && m.subs.catalogOn == s
		full := !known && len(m.subs.shared) >= maxSubscriptions
		if !full {
			if m.subs.listened == nil {
				m.subs.listened = map[string]bool{}
			}
			if m.subs.shared == nil {
				m.subs.shared = map[string]bool{}
			}
			m.subs.listened[uri], m.subs.shared[uri] = true, true
		}
		m.subs.mu.Unlock()
		if full {
			m.log.Warn("gateway: a listen stream's resource not followed: the gateway follows this many on the upstream at most",
				"upstream", m.up.Name, "uri", uri, "max", maxSubscriptions)
		}
		if known || full {
			continue
		}
		params, _ := json.Marshal(uriParams(uri)) // a string map encodes
		if _, err := s.Call(ctx, "resources/subscribe", params, nil); err != nil {
			m.log.Debug("gateway: subscribing for a listen stream failed", "upstream", m.up.Name, "uri", uri, "error", err)
		}
	}
}

// listenEraFor opens, on the 2026-07-28 session s, a listen stream of the
// gateway's naming those of uris no stream of its names yet (all of those
// followed on the session before, when s is new), and returns a channel
// closed once the upstream acknowledged it; nil when there is none to
// open. The stream lasts as long as s.
func (m *mount) listenEraFor(s *upstream.Session, uris []string) <-chan struct{} {
	m.subs.mu.Lock()
	var fresh []string
	if m.subs.eraOn != s {
		m.subs.eraOn = s
		for uri := range m.subs.era {
			fresh = append(fresh, uri) // followed on the session before: again on this one
		}
	}
	if m.subs.era == nil {
		m.subs.era = map[string]bool{}
	}
	dropped := 0
	for _, uri := range uris {
		switch {
		case m.subs.era[uri]:
		case len(m.subs.era) >= maxSubscriptions:
			dropped++
		default:
			m.subs.era[uri] = true
			fresh = append(fresh, uri)
		}
	}
	if dropped > 0 {
		m.log.Warn("gateway: a listen stream's resources not followed: the gateway follows this many on the upstream at most",
			"upstream", m.up.Name, "resources", dropped, "max", maxSubscriptions)
	}
	if len(fresh) == 0 {
		m.subs.mu.Unlock()
		return nil
	}
	ack := make(chan struct{})
	if m.subs.acks == nil {
		m.subs.acks = map[string]chan struct{}{}
	}
	key := ackKey(fresh)
	if prev := m.subs.acks[key]; prev != nil {
		close(prev) // an older stream of the same URIs, on a session gone
	}
	m.subs.acks[key] = ack
	m.subs.mu.Unlock()
	params, _ := json.Marshal(map[string]any{"notifications": map[string]any{"resourceSubscriptions": fresh}}) // encodes
	m.watchers.Go(func() {
		_, err := s.Call(m.ctx, "subscriptions/listen", params, &upstream.Notes{Aside: true})
		m.subs.mu.Lock()
		if m.subs.acks[key] == ack {
			close(ack)
			delete(m.subs.acks, key)
		}
		if m.subs.eraOn == s && s.Err() == nil {
			for _, uri := range fresh {
				delete(m.subs.era, uri) // refused or ended: the next listen stream opens it again
			}
		}
		m.subs.mu.Unlock()
		if err != nil && !errors.Is(err, upstream.ErrClosed) && !errors.Is(err, upstream.ErrGone) && m.ctx.Err() == nil {
			m.log.Debug("gateway: the upstream's resource updates are not heard", "upstream", m.up.Name, "error", err)
		}
	})
	return ack
}
