package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// retrySafe reports whether method may be sent again on a new session
// after the upstream forgot the session it was sent on: a listing, a read
// or a prompt changes nothing upstream. tools/call is safe only for a
// tool whose annotations say so (toolRetrySafe), which its handler tells
// forwardOnce.
func retrySafe(method string) bool {
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list",
		"resources/read", "prompts/get", "completion/complete":
		return true
	}
	return false
}

// toolRetrySafe reports whether the upstream's tool t says it may be
// called twice with the same effect: read-only, or idempotent.
func toolRetrySafe(t *server.Tool) bool {
	a := t.Annotations
	return a != nil && ((a.ReadOnlyHint != nil && *a.ReadOnlyHint) || (a.IdempotentHint != nil && *a.IdempotentHint))
}

// call sends method upstream on the live session; when the HTTP upstream
// answers that it no longer knows the session (it expired, or the
// upstream restarted), a new session is opened and a call that retry
// allows is sent once more on it (never twice). One that is not retried
// fails with an error that says why.
func (m *mount) call(ctx context.Context, l *link, method string, params json.RawMessage, notes *upstream.Notes, retry bool) (json.RawMessage, error) {
	s, err := l.session(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.Call(ctx, method, params, notes)
	if err == nil || ctx.Err() != nil || !errors.Is(err, streamable.ErrUnknownSession) {
		return res, err
	}
	m.g.obs.Expired(m.up.Name, retry)
	if !retry {
		m.log.Warn("gateway: upstream session expired; the call was not retried", "upstream", m.up.Name, "method", method)
		return nil, server.NewError(protocol.CodeInternal, fmt.Errorf("upstream %s: its session expired (it answered 404) and the call was not retried: "+
			"it may not be safe to send twice (the tool is not marked read-only or idempotent)", m.up.Name))
	}
	m.log.Info("gateway: upstream session expired; the call is retried on a new session", "upstream", m.up.Name, "method", method)
	if s, err = l.session(ctx); err != nil {
		return nil, err
	}
	return s.Call(ctx, method, params, notes)
}
