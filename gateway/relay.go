package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// The relay: the last stage of the call path (hop.go), which picks the
// upstream session a forwarded call goes on and sends it.

// relay sends a forwarded call of method (its params raw, notes the
// relay of what the upstream sends during it) on the upstream session
// that carries it, and returns the upstream's result, or the error the
// handler returns (callError): a stateless 2026-07-28 caller's rounds
// relayed to the upstream's 2026-07-28 session (era2026.go); else on the
// caller's link (sessions.go), across input_required rounds for a
// stateless caller in front of a 2025 upstream (rounds.go), and once more
// on a new session after the upstream forgot the session when retry
// allows (call).
func (m *mount) relay(ctx context.Context, method string, raw json.RawMessage, notes *upstream.Notes, retry bool) (json.RawMessage, error) {
	if m.relays(ctx, method) {
		return m.relayRound(ctx, method, raw, notes) // era2026.go
	}
	l, err := m.linkOf(ctx)
	if err != nil {
		return nil, m.callError(ctx, err)
	}
	defer m.release(l)
	ctx, asked := watchUntranslated(ctx, m.up.Name) // rounds.go
	if asked != nil && roundMethods[method] {
		var started error // the session's start failed: err is that
		send := func() (json.RawMessage, error) {
			s, err := l.session(ctx)
			if started = err; err != nil {
				return nil, err
			}
			return m.callAcrossRounds(ctx, s, method, raw, notes) // rounds.go
		}
		res, err := send()
		if m.up.Refused != nil && refused(err) && ctx.Err() == nil {
			res, err = m.sendRefused(ctx, method, err, send)
		}
		if err != nil && err == started { //nolint:errorlint // the very error of the start
			return nil, m.callError(ctx, err)
		}
		return res, err
	}
	res, err := m.call(ctx, l, method, raw, notes, retry)
	if err := asked.failure(); err != nil {
		return nil, err
	}
	if err != nil {
		return nil, m.callError(ctx, err)
	}
	return res, nil
}

// call sends method upstream on the live session; when the HTTP upstream
// answers that it no longer knows the session (it expired, or the
// upstream restarted), a new session is opened and a call that retry
// allows is sent once more on it (never twice). One that is not retried
// fails with an error that says why. An HTTP 401 to a caller's request
// goes to Refused (sendRefused).
func (m *mount) call(ctx context.Context, l *link, method string, params json.RawMessage, notes *upstream.Notes, retry bool) (json.RawMessage, error) {
	res, err := m.callOnce(ctx, l, method, params, notes, retry)
	if m.up.Refused != nil && refused(err) && ctx.Err() == nil {
		return m.sendRefused(ctx, method, err, func() (json.RawMessage, error) { return m.callOnce(ctx, l, method, params, notes, retry) })
	}
	return res, err
}

// callOnce is call but for a 401 (the caller's credentials refused, at
// the session's start or on the call), which it returns.
func (m *mount) callOnce(ctx context.Context, l *link, method string, params json.RawMessage, notes *upstream.Notes, retry bool) (json.RawMessage, error) {
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

// sendRefused is what follows the upstream's HTTP 401 (err) to a
// caller's request of method: Refused renews the caller's credentials,
// or answers with its error (asking the user to authorize again), and
// send sends the request once more, twice at most. A 401 means the
// upstream did nothing with it: any request may be sent again.
func (m *mount) sendRefused(ctx context.Context, method string, err error, send func() (json.RawMessage, error)) (json.RawMessage, error) {
	for _, again := range []bool{false, true} {
		m.log.Info("gateway: the upstream refused the caller's credentials (HTTP 401): renewing them", "upstream", m.up.Name, "method", method, "again", again)
		if rerr := m.up.Refused(ctx, again); rerr != nil {
			return nil, rerr
		}
		var res json.RawMessage
		if res, err = send(); !refused(err) || ctx.Err() != nil {
			return res, err
		}
	}
	return nil, err
}

// refused reports whether err is an HTTP upstream's 401 answer.
func refused(err error) bool {
	rpc, ok := errors.AsType[*transport.Error](err)
	return ok && rpc.HTTPStatus == http.StatusUnauthorized
}

// retrySafe reports whether method may be sent again on a new session
// after the upstream forgot the session it was sent on: a listing, a read
// or a prompt changes nothing upstream. tools/call is safe only for a
// tool whose annotations say so (toolRetrySafe), which its handler tells
// forwardRetry.
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

// relays reports whether the request of ctx, a stateless 2026-07-28
// request outside any task of the gateway's, relays its rounds: method
// can answer input_required, and the upstream speaks 2026-07-28 (asked
// the first time, with ctx). A start that fails says no: the translating
// path then reports the failure.
func (m *mount) relays(ctx context.Context, method string) bool {
	if m.noEra.Load() || !roundMethods[method] || server.TaskIDFromContext(ctx) != "" || m.up.Authorize != nil { // the era's session is every caller's
		return false
	}
	req := server.RequestFromContext(ctx)
	if req == nil || req.InSession() || req.Protocol != protocol.Version20260728 {
		return false
	}
	s, _ := m.eraSession(ctx)
	return s != nil
}
