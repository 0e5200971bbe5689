package gateway

import (
	"context"
	"encoding/json"
	"sync"

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

// keyOf returns the capsKey of caps.
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
		set(e.Form != nil, keyElicitationForm)
		set(e.URL != nil, keyElicitationURL)
	}
	_, ui := caps.Extensions[server.ExtensionUI]
	set(ui, keyUI)
	return k
}

// capsView is the tools an upstream lists for a client of one capsKey.
type capsView struct {
	ready chan struct{}   // closed once listed
	names map[string]bool // the upstream's own names; nil when it could not be listed: every tool
}

// toolViews are an upstream's views, by capsKey, of what is registered
// now; a new registration (a list_changed) forgets them.
type toolViews struct {
	mu    sync.Mutex
	byKey map[capsKey]*capsView
}

// forget drops the views after a listing: all of them when the tools
// served changed, since what they listed is out of date; else those that
// could not be listed, to be listed again when next asked for.
func (v *toolViews) forget(all bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
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

// viewEntry is a registered tool's upstream and its own name there.
type viewEntry struct {
	m   *mount
	own string
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
			idx[t.Name] = viewEntry{m, m.cat.toolNames[i]}
		}
	}
	g.viewIndex.Store(&idx)
}

// showsTool is the server's tool view (server.Server.SetToolView): a
// caller sees, and may call, the tools its upstream lists for a client
// with the caller's capabilities. What the listing session's
// capabilities show is known; another combination is listed once, on a
// session of its own, at the first request that needs it.
func (g *Gateway) showsTool(req *server.Request, t *server.Tool) bool {
	idx := g.viewIndex.Load()
	if idx == nil {
		return true
	}
	e, ok := (*idx)[t.Name]
	if !ok {
		return true // not an upstream's
	}
	key := keyOf(&req.ClientCapabilities)
	if key == listingKey {
		return true
	}
	v := e.m.view(key, &req.ClientCapabilities)
	base := e.m.view(listingKey, nil)
	for _, w := range []*capsView{v, base} {
		select {
		case <-w.ready:
		case <-e.m.ctx.Done():
			return false
		}
	}
	// A tool is hidden only when a new session with the listing session's
	// capabilities lists it and one with the caller's does not: one that
	// the listing session lists because of its own state (an earlier
	// call made it; a new session lists neither) is never hidden.
	return v.names == nil || base.names == nil || v.names[e.own] || !base.names[e.own]
}

// listingKey is the capsKey of the capabilities the listing session
// declares (capabilities(nil)): it lists every tool.
const listingKey = keyRoots | keySampling | keyElicitation | keyElicitationForm | keyElicitationURL | keyUI

// view returns the view of key, listing it (in the background, once)
// with caps, or with the listing session's capabilities when caps is nil,
// when it is not known yet.
func (m *mount) view(key capsKey, caps *server.ClientCapabilities) *capsView {
	m.views.mu.Lock()
	defer m.views.mu.Unlock()
	if v := m.views.byKey[key]; v != nil {
		return v
	}
	v := &capsView{ready: make(chan struct{})}
	if m.views.byKey == nil {
		m.views.byKey = map[capsKey]*capsView{}
	}
	m.views.byKey[key] = v
	declared := capabilities(nil)
	if caps != nil {
		declared = relayedCapabilities(caps)
	}
	m.watchers.Go(func() {
		defer close(v.ready)
		v.names = m.listView(declared)
	})
	return v
}

// listView lists the upstream's tools on a session of its own that
// declares caps, within the start timeout, and closes it; nil when it
// could not (every tool is then shown, as before).
func (m *mount) listView(caps json.RawMessage) map[string]bool {
	ctx, cancel := context.WithTimeoutCause(m.ctx, m.startTimeout, m.startTimeoutError())
	defer cancel()
	l := m.newLink(nil)
	l.caps = caps
	defer l.close()
	s, err := l.session(ctx)
	if err != nil {
		m.log.Warn("gateway: a tool view could not be listed: every tool shown", "upstream", m.up.Name, "error", err)
		return nil
	}
	items, err := s.List(ctx, "tools/list", "tools", maxListed)
	if err != nil {
		m.log.Warn("gateway: a tool view could not be listed: every tool shown", "upstream", m.up.Name, "error", err)
		return nil
	}
	names := make(map[string]bool, len(items))
	for _, raw := range items {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil {
			names[t.Name] = true
		}
	}
	return names
}
