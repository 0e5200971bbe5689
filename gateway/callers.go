package gateway

import (
	"context"
	"net/http"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// maxCallerLinks bounds the upstream sessions an upstream that acts as
// each caller ([Upstream].Authorize) keeps for callers without a session
// of their own (2026-07-28 stateless requests): one per caller.
const maxCallerLinks = 4096

// callerLink returns the link of req's caller, a caller without a
// downstream session of an upstream that acts as each caller: an upstream
// session of that caller alone (it carries that caller's token), made at
// its first call and closed once idle; counted until release. A caller
// the server cannot name is refused: it must never share another's.
func (m *mount) callerLink(ctx context.Context, req *server.Request) (*link, error) {
	key := m.g.srv.CallerKey(req)
	if key == "" {
		return nil, server.Errorf(protocol.CodeInvalidRequest, "upstream %s acts as each caller: it needs a verified caller", m.up.Name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.callers[key]
	if l == nil {
		switch {
		case m.ctx.Err() != nil:
			return nil, upstream.ErrClosed
		case len(m.callers) >= maxCallerLinks:
			m.refused.Add(1)
			return nil, server.Errorf(protocol.CodeServerBusy, "upstream %s: its sessions all serve other callers; try again later", m.up.Name)
		}
		l = m.newLink(nil)
		l.caller, l.owner = key, context.WithoutCancel(ctx)
		m.callers[key] = l
	}
	l.busy++
	return l, nil
}

// credentials returns the Credentials of l's upstream session: the
// upstream's, with what no call sends on a caller's link sent as its
// owner's.
func (l *link) credentials() func(context.Context) (http.Header, error) {
	creds, owner := l.m.up.Credentials, l.owner
	if creds == nil || owner == nil {
		return creds
	}
	return func(ctx context.Context) (http.Header, error) {
		if server.RequestFromContext(ctx) == nil {
			ctx = owner
		}
		return creds(ctx)
	}
}
