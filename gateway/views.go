package gateway

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/server"
)

// capsKey names what of a client's capabilities an upstream may show
// tools by: one bit each for roots, sampling (and its context and tools),
// elicitation (and its form and URL modes) and MCP Apps.
type capsKey uint8

const (
	keyRoots capsKey = 1 << iota
	keySampling
	keySamplingContext
	keySamplingTools
	keyElicitation
	keyElicitationForm
	keyElicitationURL
	keyUI
)

// keyOf returns the capsKey of caps. An elicitation capability that
// names no mode is the form mode's, as MCP reads it.
func keyOf(caps *server.ClientCapabilities) capsKey {
	var k capsKey
	set := func(on bool, bit capsKey) {
		if on {
			k |= bit
		}
	}
	set(caps.Roots != nil, keyRoots)
	if s := caps.Sampling; s != nil {
		k |= keySampling
		set(s.Context != nil, keySamplingContext)
		set(s.Tools != nil, keySamplingTools)
	}
	if e := caps.Elicitation; e != nil {
		k |= keyElicitation
		set(e.Form != nil || e.URL == nil, keyElicitationForm)
		set(e.URL != nil, keyElicitationURL)
	}
	_, ui := caps.Extensions[server.ExtensionUI]
	set(ui, keyUI)
	return k
}

// viewAtoms are the capabilities of the listing session that a caller
// may lack, each the one a view leaves out (see showsTool).
var viewAtoms = [...]capsKey{keyRoots, keySampling, keyElicitation, keyElicitationForm, keyElicitationURL, keyUI}

// lacks returns the viewAtoms a client of key k lacks: none when it has
// every capability of the listing session; the elicitation modes only
// when it declares elicitation (one that does not lacks both already).
func lacks(k capsKey) []capsKey {
	var out []capsKey
	for _, a := range viewAtoms {
		if k&a != 0 || (a&(keyElicitationForm|keyElicitationURL) != 0 && k&keyElicitation == 0) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// capsView is the tools an upstream lists for a client with the listing
// session's capabilities but one (or, the baseline, none) left out.
type capsView struct {
	ready chan struct{}   // closed once listed
	names map[string]bool // the upstream's own names; nil when it could not be listed: every tool
}

// listed reports whether v is listed already, and could be.
func (v *capsView) listed() bool {
	select {
	case <-v.ready:
		return v.names != nil
	default:
		return false
	}
}

// toolViews are an upstream's views of what is registered now, by the
// capability each leaves out (0: the baseline); a new registration (a
// list_changed) forgets them. So an upstream is listed for views at most
// len(viewAtoms)+1 times per change of its tools, whatever the callers
// declare, one listing at a time (turn).
type toolViews struct {
	mu    sync.Mutex
	byKey map[capsKey]*capsView
	turn  chan struct{} // 1-buffered: held by the one view being listed
	// hidden holds, for each caller's key whose views were all listed
	// (none failed), the upstream's own names such callers do not see:
	// a call then looks up one map, rather than each view in its turn,
	// under the lock, on its way in. Replaced, never changed, by memoize;
	// dropped with any view (forget, drop).
	hidden atomic.Pointer[map[capsKey]map[string]bool]
}

// forget drops the views after a listing: all of them when the tools
// served changed, since what they listed is out of date; else those that
// could not be listed, to be listed again when next asked for.
func (v *toolViews) forget(all bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.hidden.Store(nil)
	for key, view := range v.byKey {
		select {
		case <-view.ready:
			if all || view.names == nil {
				delete(v.byKey, key)
			}
		default:
			if all {
				delete(v.byKey, key) // its listing may predate the change
			}
		}
	}
}

// drop forgets the view of key when it is still view.
func (v *toolViews) drop(key capsKey, view *capsView) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.byKey[key] == view {
		delete(v.byKey, key)
		v.hidden.Store(nil)
	}
}

// hiddenFrom returns the names callers of key do not see, when memoized.
func (v *toolViews) hiddenFrom(key capsKey) (map[string]bool, bool) {
	if memo := v.hidden.Load(); memo != nil {
		hidden, ok := (*memo)[key]
		return hidden, ok
	}
	return nil, false
}

// memoize records what callers of key do not see, from base and views
// (the views of what they lack) when every one of them is listed and is
// still the one of its key: a name base lists and one of views does not.
func (v *toolViews) memoize(key capsKey, lacked []capsKey, base *capsView, views []*capsView) {
	if !base.listed() || slices.ContainsFunc(views, func(view *capsView) bool { return !view.listed() }) {
		return // one is still being listed, or could not be: asked again by the next caller
	}
	hidden := map[string]bool{}
	for name := range base.names {
		for _, view := range views {
			if !view.names[name] {
				hidden[name] = true
				break
			}
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.byKey[0] != base {
		return // forgotten meanwhile
	}
	for i, a := range lacked {
		if v.byKey[a] != views[i] {
			return
		}
	}
	memo := map[capsKey]map[string]bool{}
	if old := v.hidden.Load(); old != nil {
		maps.Copy(memo, *old)
	}
	memo[key] = hidden
	v.hidden.Store(&memo)
}

// viewEntry is a registered tool's upstream and its own name there.
type viewEntry struct {
	m    *mount
	own  string
	tags []string // the catalog's (endpoints.go)
}

// indexViews records which upstream serves each registered tool, for
// showsTool; g.mu is held.
func (g *Gateway) indexViews() {
	idx := map[string]viewEntry{}
	for _, m := range g.mounts {
		if m.cat == nil {
			continue
		}
		for i, t := range m.cat.tools {
			var tags []string
			if tc := m.cat.curations[i]; tc != nil {
				tags = tc.tags
			}
			idx[t.Name] = viewEntry{m, m.cat.toolNames[i], tags}
		}
	}
	g.viewIndex.Store(&idx)
	g.indexItems()
}

// showsTool is the server's tool view (server.Server.SetToolView): at a
// catalog's endpoint (endpointAt), the default one's too, only the tools
// it selects; and the tools the upstream lists for a client with the
// caller's capabilities, derived from at most len(viewAtoms)+1 listings:
// the baseline (a new session with the listing session's
// capabilities) and, for each capability of the listing session the
// caller lacks, a new session without that one. A tool is hidden when
// the baseline lists it and one of those does not: a tool shown to a
// client only when it has every capability of a set (the way upstreams
// show tools, server-everything's among them) is shown exactly to the
// callers that have them; one that the listing session lists because of
// its own state (an earlier call made it; a new session lists neither)
// is never hidden. With Shared, the callers share the listing session,
// which declares every capability, and see what it lists: no view is
// listed.
func (g *Gateway) showsTool(req *server.Request, t *server.Tool) bool {
	idx := g.viewIndex.Load()
	endpoint := g.endpointAt(req) // endpoints.go: the named endpoint's, or the catalog's default
	if g.searching && (t.Name == searchToolName || t.Name == callToolName) {
		switch {
		case endpoint == nil:
			return g.searchDefault // search.go
		case endpoint.search:
			return true
		}
		return g.searchDefault && !endpoint.off && endpointOf(req.ArrivalContext()) == nil // the catalog's default endpoint, which Config.Search has search
	}
	if idx == nil {
		return endpoint == nil
	}
	e, ok := (*idx)[t.Name]
	if endpoint != nil && (!ok || !endpoint.servesTool(e.m.up.Name, e.own, e.tags, e.m.rest.operation(e.own))) {
		return false // an endpoint of the catalog serves only the upstreams' tools it selects
	}
	if !ok || e.m.up.Shared {
		return true // not an upstream's, or one whose callers share its listing session
	}
	key := keyOf(&req.ClientCapabilities)
	if hidden, ok := e.m.views.hiddenFrom(key); ok {
		return !hidden[e.own]
	}
	lacked := lacks(key)
	if len(lacked) == 0 {
		return true
	}
	base := e.m.view(0)
	views := make([]*capsView, len(lacked))
	for i, a := range lacked {
		views[i] = e.m.view(a) // each listed in its turn, the caller's next tools too
	}
	defer e.m.views.memoize(key, lacked, base, views)
	if !e.m.awaitView(base) {
		return false
	}
	if base.names == nil || !base.names[e.own] {
		return true
	}
	for _, v := range views {
		if !e.m.awaitView(v) {
			return false
		}
		if v.names != nil && !v.names[e.own] {
			return false
		}
	}
	return true
}

// awaitView waits for v to be listed; false when the upstream closes
// first.
func (m *mount) awaitView(v *capsView) bool {
	select {
	case <-v.ready:
		return true
	case <-m.ctx.Done():
		return false
	}
}

// view returns the view that leaves out the capability without (0: the
// baseline), listing it (in the background, once, in its turn) when it
// is not known yet.
func (m *mount) view(without capsKey) *capsView {
	m.views.mu.Lock()
	defer m.views.mu.Unlock()
	if v := m.views.byKey[without]; v != nil {
		return v
	}
	v := &capsView{ready: make(chan struct{})}
	if m.views.byKey == nil {
		m.views.byKey = map[capsKey]*capsView{}
		m.views.turn = make(chan struct{}, 1)
	}
	m.views.byKey[without] = v
	turn := m.views.turn
	m.watchers.Go(func() {
		defer close(v.ready)
		select {
		case turn <- struct{}{}:
		case <-m.ctx.Done():
			return
		}
		defer func() { <-turn }()
		var listed bool
		if v.names, listed = m.listView(viewCapabilities(without)); !listed {
			m.views.drop(without, v) // no process could be had: asked again by the next caller
		}
	})
	return v
}

// viewCapabilities returns the capabilities of the listing session
// (capabilities(nil)) without the one of without (0: none left out).
func viewCapabilities(without capsKey) json.RawMessage {
	var caps map[string]map[string]any
	_ = json.Unmarshal(capabilities(nil), &caps) // a constant that decodes
	switch without {
	case keyRoots:
		delete(caps, "roots")
	case keySampling:
		delete(caps, "sampling")
	case keyElicitation:
		delete(caps, "elicitation")
	case keyElicitationForm:
		delete(caps["elicitation"], "form")
	case keyElicitationURL:
		delete(caps["elicitation"], "url")
	case keyUI:
		delete(caps["extensions"], server.ExtensionUI)
	}
	raw, _ := json.Marshal(caps) // decoded JSON encodes
	return raw
}

// listView lists the upstream's tools on a session of its own that
// declares caps, within the start timeout, and closes it; nil when it
// could not (every tool is then shown, as before). A stdio upstream's
// session runs on a process within MaxProcesses (viewProcess); listed is
// false when none could be had.
func (m *mount) listView(caps json.RawMessage) (names map[string]bool, listed bool) {
	l := m.newLink(nil)
	l.caps = caps
	if m.up.URL == "" {
		p, ok := m.viewProcess()
		if !ok {
			m.log.Debug("gateway: a tool view not listed: every process allowed is in use", "upstream", m.up.Name)
			l.close()
			return nil, false
		}
		l.given = p
		defer m.viewDone()
	}
	defer func() {
		l.close()
		if l.given != nil { // never started on
			_ = l.given.Close()
		}
	}()
	ctx, cancel := context.WithTimeoutCause(m.ctx, m.startTimeout, m.startTimeoutError())
	defer cancel()
	s, err := l.session(ctx)
	if err != nil {
		m.log.Warn("gateway: a tool view could not be listed: every tool shown", "upstream", m.up.Name, "error", err)
		return nil, true
	}
	items, err := s.List(ctx, "tools/list", "tools", maxListed)
	if err != nil {
		m.log.Warn("gateway: a tool view could not be listed: every tool shown", "upstream", m.up.Name, "error", err)
		return nil, true
	}
	names = make(map[string]bool, len(items))
	for _, raw := range items {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil {
			names[t.Name] = true
		}
	}
	return names, true
}

// viewProcess returns the process a tool view's session of a stdio
// upstream starts on (nil: it spawns its own), counted within
// MaxProcesses until viewDone: a new one when the sessions, the spare
// and a spare being spawned leave room for it, else the spare, when
// there is one (the next session's first call then spawns its own);
// false when the sessions hold every process allowed.
func (m *mount) viewProcess() (*upstream.Process, bool) {
	m.mu.Lock()
	var p *upstream.Process
	if held := len(m.sessions) + m.viewing + spawning(m.spare != nil || m.spawning); held >= m.maxProcesses {
		if m.spare == nil {
			m.mu.Unlock()
			return nil, false
		}
		p, m.spare = m.spare, nil
	}
	m.viewing++
	m.mu.Unlock()
	if p != nil {
		select {
		case <-p.Exited():
			_ = p.Close()
			p = nil
		default:
		}
	}
	return p, true
}

// spawning counts the spare, or one being spawned (spare.go), as one
// process.
func spawning(on bool) int {
	if on {
		return 1
	}
	return 0
}

// viewDone gives back the process a tool view's session held, once it
// is closed, and asks for a spare.
func (m *mount) viewDone() {
	m.mu.Lock()
	m.viewing--
	m.mu.Unlock()
	m.refillSpare()
}
