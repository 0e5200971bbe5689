package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/internal/paramheader"
	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// statelessEra speaks for a 2026-07-28 stateless request: it carries its
// protocol version, client capabilities and client info in _meta instead
// of relying on an initialize handshake, and belongs to no session (the
// one it arrived on is only its connection). A handler's questions to the
// client become an input_required result with a signed requestState
// (mrtr.go), and tasks are those of the tasks extension, which no session
// owns.
type statelessEra struct {
	srv   *Server
	round *mrtrRound // the multi round-trip state; nil for a method that cannot ask
	first mrtrRound  // round's storage for a first round, held here rather than allocated apart
}

// newStatelessEra admits req, whose _meta names the protocol version raw,
// as a stateless request, taking the client's capabilities and info from
// _meta, and checking a tools/call's Mcp-Param-* headers when ctx carries
// the HTTP headers (see internal/paramheader). What makes it unanswerable
// is left in req.admitErr. The era is made in e, a zero statelessEra.
func (s *Server) newStatelessEra(ctx context.Context, req *Request, raw json.RawMessage, e *statelessEra) *statelessEra {
	e.srv = s
	version := protocol.Version20260728 // the usual case, without a copy
	if !isJSONString(raw, version) {
		var decoded string // on the heap only here, where it is decoded into
		if json.Unmarshal(raw, &decoded) != nil {
			req.admitErr = Errorf(protocol.CodeInvalidParams, "_meta %q must be a string", vocab.MetaProtocolVersion)
			return e
		}
		version = decoded
	}
	req.Protocol = truncateUTF8(version, maxClientText) // a valid one is short; an invalid one is echoed
	if version != protocol.Version20260728 {
		version = req.Protocol
		err := Errorf(protocol.CodeUnsupportedProtocolVersion, "unsupported protocol version %q", version)
		err.Data, _ = json.Marshal(map[string]any{"supported": protocol.Versions(), "requested": version})
		req.admitErr = err
		return e
	}
	rawCaps, ok := req.Meta.Get(vocab.MetaClientCapabilities)
	if !ok || (!isEmptyObject(rawCaps) && json.Unmarshal(rawCaps, &req.ClientCapabilities) != nil) {
		req.admitErr = Errorf(protocol.CodeInvalidParams, "_meta %q is required and must be an object", vocab.MetaClientCapabilities)
		return e
	}
	req.ClientCapabilities = req.ClientCapabilities.bounded()
	if rawInfo, ok := req.Meta.Get(vocab.MetaClientInfo); ok {
		_ = json.Unmarshal(rawInfo, &req.ClientInfo) // self-reported, informational only
		req.ClientInfo = req.ClientInfo.bounded()
	}
	if vocab.RemovedIn2026(req.Method) {
		req.admitErr = Errorf(protocol.CodeMethodNotFound, "method %s is not part of protocol version %s", req.Method, version)
		return e
	}
	if why := s.checkParamHeaders(ctx, req); why != "" {
		req.admitErr = Errorf(protocol.CodeHeaderMismatch, "%s", why)
		return e
	}
	var err *Error
	if e.round, err = s.readRound(ctx, req, &e.first); err != nil {
		req.admitErr = err
	}
	return e
}

// isJSONString reports whether raw is s as a JSON string without escapes.
func isJSONString(raw []byte, s string) bool {
	return len(raw) == len(s)+2 && raw[0] == '"' && raw[len(raw)-1] == '"' && string(raw[1:len(raw)-1]) == s
}

// isEmptyObject reports whether raw is {}, which leaves whatever it is
// decoded into as it was.
func isEmptyObject(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "{}" }

// checkParamHeaders compares the Mcp-Param-* headers of a tools/call with
// the arguments they mirror; it returns why they disagree, or "".
func (s *Server) checkParamHeaders(ctx context.Context, req *Request) string {
	if req.Method != "tools/call" || req.viaCallTool { // call_tool mirrors no argument (tool_search.go)
		return ""
	}
	rt := s.lookupFor(req, req.Name) // a refused tool is answered as unknown, later
	if rt == nil || len(rt.mirrors) == 0 {
		return ""
	}
	h, ok := paramheader.HeaderFromContext(ctx)
	if !ok {
		return ""
	}
	return paramheader.Check(h, rt.mirrors, req.args)
}

// session is nil: the request belongs to no session.
func (*statelessEra) session() *Session { return nil }

// callClient returns the client's answer from the retried request, or the
// interruption that asks for it; in a task, the task lists the question
// until tasks/update answers it (tasks.go).
func (e *statelessEra) callClient(ctx context.Context, req *Request, method string, params, result any) error {
	if name, ok := capabilityFor(req.ClientCapabilities, method); !ok {
		return e.capabilityError(fmt.Errorf("%w: %s needs the %q capability", ErrCapability, method, name), map[string]any{name: map[string]any{}})
	}
	if t := taskOf(ctx); t != nil {
		return e.srv.askForTask(ctx, t, method, params, result)
	}
	if e.round == nil {
		return fmt.Errorf("mcp: %s: a %s request cannot ask the client for input in protocol version %s", method, req.Method, req.Protocol)
	}
	return e.round.ask(ctx, method, params, result)
}

// capabilityError is a protocol error, with the capability in its data.
func (*statelessEra) capabilityError(err error, need map[string]any) error {
	e := NewError(protocol.CodeMissingRequiredClientCapability, err)
	e.Data, _ = json.Marshal(map[string]any{"requiredCapabilities": need})
	return e
}

// interrupted answers input_required, with a requestState carrying the
// answers so far, or a relaying handler's questions and state.
func (e *statelessEra) interrupted(err error) (any, error) {
	if e.round == nil {
		return nil, err
	}
	if own, ok := errors.AsType[*InputRequired](err); ok {
		return e.srv.relayedInputResult(e.round, own)
	}
	return e.srv.inputRequiredResult(e.round)
}

// decorate adds resultType ("complete" unless the result says otherwise),
// the cache hints of a cacheable method and the server's info in _meta.
// The result comes out as json.Marshal of its members as a map would
// have it: members sorted by name, HTML-escaped.
func (e *statelessEra) decorate(method string, raw json.RawMessage) (json.RawMessage, error) {
	if out, ok := e.decorateFast(method, raw); ok {
		return out, nil
	}
	return e.decorateSlow(method, raw)
}

// member is one member of an encoded object.
type member struct{ key, val []byte }

// decorateFast is decorate without the map round trip, for the usual
// result: a compact object whose member names need no escaping, with no
// _meta of its own. ok is false for any other, which decorateSlow handles.
func (e *statelessEra) decorateFast(method string, raw json.RawMessage) (json.RawMessage, bool) {
	info := e.srv.serverInfoMeta
	if info == nil || len(raw) == 0 || raw[0] != '{' || !compactJSON(raw) || !jsonscan.Valid(raw) {
		return nil, false
	}
	var buf [8]member
	fields := buf[:0]
	plain := true
	jsonscan.EachMember(raw, func(key, val []byte) {
		if !plainKey(key) {
			plain = false
			return
		}
		for i := range fields { // a repeated member: the last one wins
			if string(fields[i].key) == string(key) {
				fields[i].val = val
				return
			}
		}
		fields = append(fields, member{key, val})
	})
	if !plain {
		return nil, false
	}
	var resultType []byte
	for _, f := range fields {
		switch string(f.key) {
		case "_meta":
			return nil, false
		case "resultType":
			resultType = f.val
		}
	}
	if resultType == nil {
		resultType = []byte(`"complete"`)
		fields = append(fields, member{[]byte("resultType"), resultType})
	}
	fields = append(fields, member{[]byte("_meta"), info})
	if cacheable[method] && string(resultType) == `"complete"` {
		var hasTTL, hasScope bool
		for _, f := range fields {
			hasTTL = hasTTL || string(f.key) == "ttlMs"
			hasScope = hasScope || string(f.key) == "cacheScope"
		}
		if !hasTTL {
			fields = append(fields, member{[]byte("ttlMs"), e.srv.cacheTTL})
		}
		if !hasScope {
			if e.srv.cacheScope == nil {
				return nil, false
			}
			fields = append(fields, member{[]byte("cacheScope"), e.srv.cacheScope})
		}
	}
	slices.SortFunc(fields, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	size := 1
	for _, f := range fields {
		size += len(f.key) + len(f.val) + 4
	}
	out := make([]byte, 0, size+16)
	out = append(out, '{')
	for i, f := range fields {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, f.key...)
		out = append(out, '"', ':')
		out = appendHTMLEscaped(out, f.val)
	}
	return append(out, '}'), true
}

// appendToolResult encodes a tools/call result as decorate would have it
// after appendJSON, in one pass: what every tool call of this era pays
// otherwise is an encoding, a parse of it and a copy. It covers the usual
// result, text items and structured content without _meta of their own;
// ok is false for any other (then appendJSON and decorate do the work).
func (e *statelessEra) appendToolResult(r *CallToolResult) (json.RawMessage, bool) {
	info := e.srv.serverInfoMeta
	if info == nil || len(r.Meta) > 0 {
		return nil, false
	}
	// The members sorted by name, as decorate writes them.
	b := make([]byte, 0, r.encodedSizeHint()+len(info)+len(`"_meta":,"resultType":"complete"`))
	b = append(b, `{"_meta":`...)
	b = append(b, info...) // json.Marshal escaped it already
	b = append(b, `,"content":[`...)
	for i, c := range r.Content {
		t, ok := c.(*TextContent)
		if !ok || t.Annotations != nil || t.Meta != nil {
			return nil, false
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		start := len(b)
		b = jsonscan.AppendString(b, t.Text)
		if needsHTMLEscape(b[start:]) {
			escaped := appendHTMLEscaped(nil, b[start:])
			b = append(b[:start], escaped...)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	b = append(b, `,"resultType":"complete"`...)
	if r.StructuredContent != nil {
		raw, err := json.Marshal(r.StructuredContent) // compact and HTML-escaped, as decorate leaves it
		if err != nil {
			return nil, false
		}
		b = append(b, `,"structuredContent":`...)
		b = append(b, raw...)
	}
	return append(b, '}'), true
}

// needsHTMLEscape reports whether appendHTMLEscaped would change b.
func needsHTMLEscape(b []byte) bool {
	for i, c := range b {
		if c == '<' || c == '>' || c == '&' || (c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8) {
			return true
		}
	}
	return false
}

// plainKey reports whether json.Marshal writes key as it is: printable
// ASCII with nothing to escape.
func plainKey(key []byte) bool {
	for _, c := range key {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// compactJSON reports whether the JSON text b has no whitespace outside
// its strings, so that json.Compact would leave it as it is.
func compactJSON(b []byte) bool {
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

// appendHTMLEscaped appends src to dst as json.HTMLEscape would write it:
// <, >, & and U+2028, U+2029 escaped, the rest as it is.
func appendHTMLEscaped(dst, src []byte) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(src); i++ {
		if c := src[i]; c == '<' || c == '>' || c == '&' {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			start = i + 1
		}
		// U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
		if src[i] == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8 {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[src[i+2]&0xF])
			start = i + 3
			i += 2
		}
	}
	return append(dst, src[start:]...)
}

// decorateSlow is decorate through a map of the result's members.
func (e *statelessEra) decorateSlow(method string, raw json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return raw, err
	}
	if _, ok := fields["resultType"]; !ok {
		fields["resultType"] = json.RawMessage(`"complete"`)
	}
	cfg := &e.srv.cfg
	if cacheable[method] && string(fields["resultType"]) == `"complete"` {
		if _, ok := fields["ttlMs"]; !ok {
			fields["ttlMs"] = json.RawMessage(strconv.FormatInt(cfg.cacheTTL.Milliseconds(), 10))
		}
		if _, ok := fields["cacheScope"]; !ok {
			fields["cacheScope"], _ = json.Marshal(cfg.cacheScope)
		}
	}
	meta := map[string]json.RawMessage{}
	if m, ok := fields["_meta"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil {
			return raw, err
		}
	}
	if _, ok := meta[vocab.MetaServerInfo]; !ok {
		info, err := json.Marshal(cfg.impl)
		if err != nil {
			return raw, err
		}
		meta[vocab.MetaServerInfo] = info
		if fields["_meta"], err = json.Marshal(meta); err != nil {
			return raw, err
		}
	}
	return json.Marshal(fields)
}

// toolTask is server-directed: a call of a tool with task support, by a
// client that declared the tasks extension, is a task; a Deferred tool
// becomes one when its handler calls RunAsTask. A legacy params.task is
// ignored.
func (e *statelessEra) toolTask(ctx context.Context, rt *registeredTool, call *CallToolRequest) (bool, any, error) {
	s, req := e.srv, call.Request
	support := taskSupportOf(rt.tool.Execution)
	switch {
	case support == TaskSupportForbidden:
		return false, nil, nil // a legacy params.task never promotes a tool
	case !wantsTasks(req) && support == TaskSupportRequired:
		return true, nil, missingTasksExtension(fmt.Sprintf("tool %q", call.Name))
	case !wantsTasks(req):
		return false, nil, nil
	case rt.tool.Execution.Deferred:
		return s.deferredTask(ctx, rt, call)
	}
	t, err := s.newTask(ctx, req, s.cfg.tasks.ttl)
	if err != nil {
		return true, nil, err
	}
	s.launchAfterResponse(req, t, func(ctx context.Context) (*CallToolResult, error) { return rt.handler(ctx, call) })
	return true, t.view().created2026(), nil
}

// taskContext gives the task a view of the request of its own. The task
// runs after its request was answered, so nothing it logs or reports can
// reach the client: that view has no progress token and no log level.
func (*statelessEra) taskContext(_, base context.Context, req *Request, _ *task) context.Context {
	r := *req
	r.ends.ForgetDone() // the request's callbacks (and their storage) stay its own
	r.call, r.callHeld = CallToolRequest{}, false
	r.Meta = req.Meta.without(vocab.MetaProgressToken, vocab.MetaLogLevel)
	base = context.WithValue(base, requestKey{}, &r)
	return context.WithValue(base, progressKey{}, (*progressState)(nil))
}

// taskMethod: tasks/result and tasks/list are not part of the extension.
func (*statelessEra) taskMethod(method string) bool {
	return method != "tasks/result" && method != "tasks/list"
}

// tasksRefused refuses a client that did not declare the tasks extension.
func (*statelessEra) tasksRefused(req *Request) error {
	if !wantsTasks(req) {
		return missingTasksExtension(req.Method)
	}
	return nil
}

// taskStatus is the task with its result, its error or its pending
// questions inline.
func (*statelessEra) taskStatus(v taskView) any { return v.detailed2026() }

// taskCancelled acknowledges with an empty result, whatever the task's
// status was.
func (*statelessEra) taskCancelled(*task, bool) (any, error) { return struct{}{}, nil }
