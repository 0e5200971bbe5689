package server

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/vigil-mcp/vigil/transport"
)

// ClientCall is one server-to-client request (sampling/createMessage,
// elicitation/create, roots/list, ping) as call middleware sees it on its
// way out of [Session.Call]. Middleware may read every field, may add keys to
// Meta before calling the next CallFunc, and must not modify the others.
type ClientCall struct {
	Session *Session
	Method  string
	// Params are the params as given to Call, before encoding.
	Params any
	// Meta holds keys merged into the encoded params' _meta when the request
	// is written (a tracing middleware puts traceparent here). They replace
	// keys of the same name the params already carry. nil means none; a
	// middleware that adds a key first makes the map.
	Meta map[string]any
	// Result is where the client's answer is decoded; nil discards it.
	Result any
	// ID is the request's JSON-RPC id, set once the request is admitted
	// for sending; zero before that, and when Call refused it.
	ID transport.ID
}

// CallFunc sends a server-to-client request and waits for its answer, with
// the errors of [Session.Call].
type CallFunc func(ctx context.Context, c *ClientCall) error

// CallMiddleware wraps a CallFunc; the returned CallFunc must be safe for
// concurrent use. It sees every request [Session.Call] sends, including
// those of [CallClient], Elicit, CreateMessage and ListRoots in a session.
// (A stateless 2026-07-28 request asks through its result instead, and sends
// nothing.)
type CallMiddleware func(CallFunc) CallFunc

// callChain wraps send in the configured call middleware.
func (s *Server) callChain(send CallFunc) CallFunc {
	mw := s.cfg.callMiddleware
	for i := len(mw) - 1; i >= 0; i-- {
		if mw[i] != nil {
			send = mw[i](send)
		}
	}
	return send
}

// withCallMeta merges meta into the _meta of encoded params (nil params: an
// object with only _meta). Params that are not a JSON object, or a meta
// value that cannot be encoded, leave raw as it is.
func withCallMeta(raw json.RawMessage, meta map[string]any) json.RawMessage {
	if len(meta) == 0 {
		return raw
	}
	fields := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(raw); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		if json.Unmarshal(t, &fields) != nil {
			return raw
		}
	}
	m := map[string]json.RawMessage{}
	if old := fields["_meta"]; len(old) > 0 && !bytes.Equal(old, []byte("null")) {
		if json.Unmarshal(old, &m) != nil {
			return raw
		}
	}
	for k, v := range meta {
		b, err := json.Marshal(v)
		if err != nil {
			return raw
		}
		m[k] = b
	}
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	fields["_meta"] = b
	out, err := json.Marshal(fields)
	if err != nil {
		return raw
	}
	return out
}
