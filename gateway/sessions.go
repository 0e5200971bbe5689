package gateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The defaults of [Config]'s bounds on the upstream sessions of
// downstream sessions.
const (
	defaultMaxProcesses = 32
	defaultIdleTimeout  = 5 * time.Minute
)

// linkOf returns the link a call with ctx goes through, and counts the
// call on it until release: the link of the caller's downstream session,
// made at its first call; the catalog's for a shared upstream, and for a
// caller without a session (a 2026-07-28 stateless request). A new
// session beyond MaxProcesses of a stdio upstream is refused, unless
// another caller's idle process is reclaimed for it (share.go).
func (m *mount) linkOf(ctx context.Context) (*link, error) {
	req := server.RequestFromContext(ctx)
	switch {
	case m.up.Authorize != nil && !m.up.Shared && req != nil && !req.InSession():
		return m.callerLink(ctx, req) // callers.go: its token on no one else's session
	case m.up.Shared || req == nil || !req.InSession():
		return m.catalog, nil
	}
	ss := req.Session
	m.mu.Lock()
	l := m.sessions[ss]
	var reclaimed *link
	if l == nil {
		caller := m.share.callerOf(req)
		switch {
		case m.ctx.Err() != nil, ended(ss):
			m.mu.Unlock()
			return nil, upstream.ErrClosed
		case m.up.URL == "" && len(m.sessions)+m.viewing >= m.maxProcesses:
			if reclaimed = m.reclaimFor(caller); reclaimed != nil { // share.go
				break
			}
			m.mu.Unlock()
			m.refused.Add(1)
			m.g.obs.Refused(m.up.Name)
			m.log.Warn("upstream: a session's call refused: every process allowed serves another session",
				"upstream", m.up.Name, "session", ss.ID(), "max_processes", m.maxProcesses)
			return nil, server.Errorf(protocol.CodeServerBusy,
				"upstream %s: its %d processes all serve other sessions; try again later", m.up.Name, m.maxProcesses)
		}
		l = m.newLink(ss)
		l.caller = caller
		if m.up.Authorize != nil {
			l.owner = context.WithoutCancel(ctx) // callers.go
		}
		m.sessions[ss] = l
		m.watchers.Go(func() {
			select {
			case <-ss.Done():
			case <-l.ctx.Done(): // reaped, or the gateway closed
			}
			m.drop(l)
		})
	}
	l.busy++
	m.mu.Unlock()
	if reclaimed != nil {
		reclaimed.close() // its process has exited before the newcomer's starts
	}
	return l, nil
}

// ended reports whether the downstream session ss has ended.
func ended(ss *server.Session) bool {
	select {
	case <-ss.Done():
		return true
	default:
		return false
	}
}

// release ends a call's use of l, which linkOf returned.
func (m *mount) release(l *link) {
	if l.ss == nil && l.caller == "" { // the catalog's
		return
	}
	m.mu.Lock()
	l.busy--
	l.lastUsed = m.now()
	m.mu.Unlock()
}

// drop forgets l and closes it: its downstream session ended, it was
// idle, or the gateway closes.
func (m *mount) drop(l *link) {
	m.mu.Lock()
	if m.sessions[l.ss] == l {
		delete(m.sessions, l.ss)
	}
	m.mu.Unlock()
	l.close()
	m.refillSpare() // room for one, when the sessions held every process allowed
}

// reapIdle closes the links of downstream sessions that have had no call
// in flight for IdleTimeout at now, and hold no resource subscription,
// and waits for their processes.
func (m *mount) reapIdle(now time.Time) {
	var idle []*link
	m.mu.Lock()
	for ss, l := range m.sessions {
		if l.busy == 0 && now.Sub(l.lastUsed) >= m.idle && len(ss.Subscriptions()) == 0 { // a subscriber's waits for its updates
			delete(m.sessions, ss)
			idle = append(idle, l)
		}
	}
	for key, l := range m.callers { // callers.go
		if l.busy == 0 && now.Sub(l.lastUsed) >= m.idle {
			delete(m.callers, key)
			idle = append(idle, l)
		}
	}
	m.mu.Unlock()
	for _, l := range idle {
		if l.ss != nil {
			m.log.Debug("upstream session idle: closed", "upstream", m.up.Name, "session", l.ss.ID())
		}
		l.close()
	}
}

// reapEvery returns how often links idle for idle are looked for: they
// are closed between idle and 1.5 idle (idle plus a second at least)
// after their last call.
func reapEvery(idle time.Duration) time.Duration {
	return max(idle/2, time.Second)
}

// capabilities returns the client capabilities a session of the
// upstream declares: those of the downstream session ss that the
// gateway relays (relayedCapabilities), or all of them for the catalog's
// (nil ss), whose requests come from any client.
func capabilities(ss *server.Session) json.RawMessage {
	if ss == nil {
		// Skills and views are copied from its listing (skills.go, apps.go).
		return json.RawMessage(`{"sampling":{},"elicitation":{"form":{},"url":{}},"roots":{},"extensions":{"io.modelcontextprotocol/skills":{},"` + server.ExtensionUI + `":` + viewCapability + `}}`)
	}
	caps := ss.ClientCapabilities()
	return relayedCapabilities(&caps)
}

// relayedCapabilities returns what of caps the gateway relays: sampling,
// elicitation, roots and MCP Apps.
func relayedCapabilities(caps *server.ClientCapabilities) json.RawMessage {
	var relayed struct {
		Roots       *server.RootsCapability       `json:"roots,omitempty"` // its list_changed is relayed (roots.go)
		Sampling    *server.SamplingCapability    `json:"sampling,omitempty"`
		Elicitation *server.ElicitationCapability `json:"elicitation,omitempty"`
		Extensions  map[string]any                `json:"extensions,omitempty"`
	}
	relayed.Roots, relayed.Sampling, relayed.Elicitation = caps.Roots, caps.Sampling, caps.Elicitation
	if ui, ok := caps.Extensions[server.ExtensionUI]; ok {
		relayed.Extensions = map[string]any{server.ExtensionUI: ui} // the upstream's results for a client that renders views
	}
	raw, _ := json.Marshal(relayed) // plain structs: encodes
	return raw
}
