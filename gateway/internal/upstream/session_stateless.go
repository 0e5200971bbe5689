package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The _meta keys of a 2026-07-28 request and result.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// maxInputRounds bounds the input_required rounds of one call.
const maxInputRounds = 8

// statelessConn is what a Conn that carries each request on its own
// (HTTP: streamable.Dial) implements: it sends the headers of
// 2026-07-28 requests from UseStateless(version) on, and no session's
// ("" goes back).
type statelessConn interface {
	UseStateless(version string)
}

// start opens the session: initialize, or for a 2026-07-28 upstream
// server/discover. Over HTTP an upstream that refuses initialize with an
// error answer is asked server/discover, and spoken to statelessly when
// it speaks 2026-07-28.
func (s *Session) start(ctx context.Context) error {
	if s.cfg.ProtocolVersion == protocol.Version20260728 {
		return s.discover(ctx)
	}
	err := s.initialize(ctx)
	var rpc *transport.Error
	if _, ok := s.conn.(statelessConn); err == nil || !ok || !errors.As(err, &rpc) {
		return err
	}
	if derr := s.discover(ctx); derr != nil {
		s.log.Debug("upstream: neither initialize nor server/discover", "error", derr)
		return err // initialize's refusal says more
	}
	return nil
}

// discover asks server/discover as a 2026-07-28 client and, when the
// upstream speaks 2026-07-28, makes the session stateless: every request
// then carries the version, capabilities and client info in _meta.
func (s *Session) discover(ctx context.Context) error {
	caps := s.cfg.Capabilities
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	info, err := json.Marshal(map[string]string{"name": cmp(s.cfg.ClientName, "vigil"), "version": cmp(s.cfg.ClientVersion, "dev")})
	if err != nil {
		return err
	}
	s.meta = map[string]json.RawMessage{
		metaProtocolVersion:    json.RawMessage(`"` + protocol.Version20260728 + `"`),
		metaClientCapabilities: caps,
		metaClientInfo:         info,
	}
	sc, _ := s.conn.(statelessConn)
	if sc != nil {
		sc.UseStateless(protocol.Version20260728)
	}
	if err := s.discovered(ctx); err != nil {
		s.meta = nil
		if sc != nil {
			sc.UseStateless("")
		}
		return fmt.Errorf("upstream %s: server/discover: %w", s.cfg.Name, err)
	}
	return nil
}

// discovered runs server/discover and keeps what it answered.
func (s *Session) discovered(ctx context.Context) error {
	raw, err := s.call(ctx, "server/discover", mergeParams(nil, s.meta, nil), nil)
	if err != nil {
		return err
	}
	var d struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      json.RawMessage            `json:"capabilities"`
		Instructions      string                     `json:"instructions"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("%w: %w", ErrGone, err)
	}
	if !slices.Contains(d.SupportedVersions, protocol.Version20260728) {
		return fmt.Errorf("the upstream does not speak %s (it speaks %q)", protocol.Version20260728, d.SupportedVersions)
	}
	s.init = InitializeResult{ProtocolVersion: protocol.Version20260728, Capabilities: d.Capabilities, ServerInfo: d.Meta[metaServerInfo], Instructions: d.Instructions}
	return nil
}

// callStateless is Call on a 2026-07-28 upstream: params carry the
// session's _meta; an input_required result's requests are answered
// through OnRequest, with ctx, and the request is sent again with the
// answers and the upstream's requestState, at most maxInputRounds times.
// The result comes back without what the era adds to every result
// (resultType, the server's info).
func (s *Session) callStateless(ctx context.Context, method string, params json.RawMessage, notes *Notes) (json.RawMessage, error) {
	var again map[string]json.RawMessage // inputResponses and requestState
	for round := 0; ; round++ {
		res, err := s.call(ctx, method, mergeParams(params, s.meta, again), notes)
		if err != nil {
			return nil, err
		}
		var r struct {
			ResultType    string `json:"resultType"`
			InputRequests map[string]struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			} `json:"inputRequests"`
			RequestState json.RawMessage `json:"requestState"`
		}
		if json.Unmarshal(res, &r) != nil || r.ResultType != "input_required" {
			return WithoutEraMembers(res), nil
		}
		switch {
		case round == maxInputRounds:
			return nil, &transport.Error{Code: int64(protocol.CodeInternal), Message: fmt.Sprintf("the upstream asked for input more than %d times", maxInputRounds)}
		case len(r.InputRequests) > s.cfg.MaxIncoming:
			s.refused.Add(1)
			return nil, &transport.Error{Code: int64(protocol.CodeInternal), Message: fmt.Sprintf("the upstream asked for more than %d inputs at once", s.cfg.MaxIncoming)}
		case s.cfg.OnRequest == nil:
			return nil, &transport.Error{Code: int64(protocol.CodeInternal), Message: "the upstream asked for input this client cannot give"}
		}
		answers := make(map[string]json.RawMessage, len(r.InputRequests))
		for key, in := range r.InputRequests {
			ans, err := s.cfg.OnRequest(ctx, &transport.Request{ID: transport.StringID(key), Method: in.Method, Params: in.Params})
			if err != nil {
				return nil, err
			}
			if ans == nil {
				ans = json.RawMessage(`{}`)
			}
			answers[key] = ans
		}
		responses, err := json.Marshal(answers)
		if err != nil {
			return nil, err
		}
		again = map[string]json.RawMessage{"inputResponses": responses}
		if len(r.RequestState) > 0 {
			again["requestState"] = r.RequestState
		}
	}
}

// mergeParams returns params (a JSON object, or nil) with the members of
// meta added to its _meta and the members of top added to it.
func mergeParams(params json.RawMessage, meta, top map[string]json.RawMessage) json.RawMessage {
	fields := map[string]json.RawMessage{}
	if len(params) > 0 {
		_ = json.Unmarshal(params, &fields)
	}
	m := map[string]json.RawMessage{}
	if raw, ok := fields["_meta"]; ok {
		_ = json.Unmarshal(raw, &m)
	}
	for k, v := range meta {
		m[k] = v
	}
	fields["_meta"], _ = json.Marshal(m)
	for k, v := range top {
		fields[k] = v
	}
	out, _ := json.Marshal(fields)
	return out
}

// Round sends method with params once to a 2026-07-28 upstream, the
// members of meta replacing the session's in params._meta (a caller's
// capabilities and info, say), and returns the result as the upstream
// gave it, resultType included: complete, input_required or a task, for
// the caller to handle. On a session of the 2025 era it fails.
func (s *Session) Round(ctx context.Context, method string, params json.RawMessage, meta map[string]json.RawMessage, notes *Notes) (json.RawMessage, error) {
	if s.meta == nil {
		return nil, fmt.Errorf("upstream %s: a round needs a %s session", s.cfg.Name, protocol.Version20260728)
	}
	// The era's members go into params._meta with the call's own (trace
	// context, progress token) in one splice (withMeta), params left
	// undecoded.
	var n Notes
	if notes != nil {
		n = *notes
	}
	members := make([]byte, 0, 256+len(n.Meta))
	for k, v := range s.meta {
		if _, over := meta[k]; !over {
			members = appendMember(members, k, v)
		}
	}
	for k, v := range meta {
		members = appendMember(members, k, v)
	}
	if len(n.Meta) > 0 {
		members = append(append(members, ','), n.Meta...)
	}
	n.Meta = members
	return s.call(ctx, method, params, &n)
}

// appendMember appends to members (`"k":v,...`) the member k: v.
func appendMember(members []byte, k string, v json.RawMessage) []byte {
	if len(members) > 0 {
		members = append(members, ',')
	}
	return append(append(strconv.AppendQuote(members, k), ':'), v...)
}
