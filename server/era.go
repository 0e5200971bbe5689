package server

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// cacheable lists the methods whose 2026-07-28 results carry cache hints
// (ttlMs, cacheScope).
var cacheable = map[string]bool{
	"server/discover": true, "tools/list": true, "prompts/list": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
}

// removedIn2026 lists the methods a stateless request may not call.
var removedIn2026 = []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "tasks/result", "tasks/list"}

// readStatelessMeta makes req a stateless request when its _meta names a
// protocol version (on a session that was never initialized), taking the
// client's capabilities and info from _meta. What makes it unanswerable is
// left in req.admitErr.
func (s *Server) readStatelessMeta(req *Request) {
	rawVersion, ok := req.Meta[protocol.MetaProtocolVersion]
	if !ok {
		return
	}
	req.Stateless = true
	var version string
	if json.Unmarshal(rawVersion, &version) != nil {
		req.admitErr = Errorf(protocol.CodeInvalidParams, "_meta %q must be a string", protocol.MetaProtocolVersion)
		return
	}
	req.Protocol = version
	if version != protocol.Version20260728 {
		e := Errorf(protocol.CodeUnsupportedProtocolVersion, "unsupported protocol version %q", version)
		e.Data, _ = json.Marshal(map[string]any{"supported": protocol.Versions(), "requested": version})
		req.admitErr = e
		return
	}
	rawCaps, ok := req.Meta[protocol.MetaClientCapabilities]
	if !ok || json.Unmarshal(rawCaps, &req.ClientCapabilities) != nil {
		req.admitErr = Errorf(protocol.CodeInvalidParams, "_meta %q is required and must be an object", protocol.MetaClientCapabilities)
		return
	}
	if rawInfo, ok := req.Meta[protocol.MetaClientInfo]; ok {
		_ = json.Unmarshal(rawInfo, &req.ClientInfo) // self-reported, informational only
	}
	if slices.Contains(removedIn2026, req.Method) {
		req.admitErr = Errorf(protocol.CodeMethodNotFound, "method %s is not part of protocol version %s", req.Method, version)
		return
	}
	if err := s.readRound(req); err != nil {
		req.admitErr = err
	}
}

// decorateResult adds what every 2026-07-28 result carries: resultType
// ("complete" unless the result says otherwise) and the server's info in
// _meta.
func (s *Server) decorateResult(method string, raw json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return raw, err
	}
	if _, ok := fields["resultType"]; !ok {
		fields["resultType"] = json.RawMessage(`"complete"`)
	}
	if cacheable[method] && string(fields["resultType"]) == `"complete"` {
		if _, ok := fields["ttlMs"]; !ok {
			fields["ttlMs"] = json.RawMessage(strconv.FormatInt(s.cfg.cacheTTL.Milliseconds(), 10))
		}
		if _, ok := fields["cacheScope"]; !ok {
			fields["cacheScope"], _ = json.Marshal(s.cfg.cacheScope)
		}
	}
	meta := map[string]json.RawMessage{}
	if m, ok := fields["_meta"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil {
			return raw, err
		}
	}
	if _, ok := meta[protocol.MetaServerInfo]; !ok {
		info, err := json.Marshal(s.cfg.impl)
		if err != nil {
			return raw, err
		}
		meta[protocol.MetaServerInfo] = info
		if fields["_meta"], err = json.Marshal(meta); err != nil {
			return raw, err
		}
	}
	return json.Marshal(fields)
}

// discover answers server/discover: the versions, capabilities and
// instructions of this server.
func (s *Server) discover(context.Context, *Request) (any, error) {
	caps := s.capabilities()
	s.withTasksExtension(&caps) // tasks.go
	return struct {
		ResultType        string       `json:"resultType"`
		SupportedVersions []string     `json:"supportedVersions"`
		Capabilities      Capabilities `json:"capabilities"`
		Instructions      string       `json:"instructions,omitempty"`
	}{"complete", protocol.Versions(), caps, s.cfg.instructions}, nil
}
