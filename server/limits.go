package server

import (
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The bounds on what a client sends that the server keeps beyond the
// moment it reads it: in a session's state (and, in shared mode, its
// record in the store), in the tables of requests in flight, in error
// texts and cancel causes. Each is checked where the bytes enter; a value
// over its bound is refused (the JSON-RPC code named) or cut, as said.
// The transport bounds the method (128 bytes) and a string id (256 bytes)
// as it decodes a message: both are invalid requests (-32600).
// Only the result cap is an option ([WithMaxResultBytes],
// [Tool.MaxResultBytes]): the others follow the spec or the protocol's
// own sizes, and no valid use comes near them. The result cap bounds what
// a handler makes in answer to a request (tools/call, resources/read,
// prompts/get, completion/complete), not what it is sent.
const (
	// maxInitializeParams bounds the params of initialize (-32602 over
	// it, before any of it is kept): real clients send under 2 KiB.
	maxInitializeParams = 64 << 10
	// maxClientInfoString bounds each string of clientInfo (name, title,
	// version), kept cut on a UTF-8 boundary: it is self-reported and only
	// informational, so a long one is no reason to refuse a client.
	maxClientInfoString = 256
	// maxCapabilityKeys, maxCapabilityKey and maxCapabilityValue bound
	// what is kept of the client's experimental and extension
	// capabilities: the first keys in order, none longer than the key
	// bound, each value kept when its JSON fits the value bound, else
	// kept as {} (the capability's presence, all the server reads).
	maxCapabilityKeys  = 16
	maxCapabilityKey   = 128
	maxCapabilityValue = 256
	// maxToolName is the spec's bound on a tool name (-32602 over it,
	// before the lookup, the middleware and the metrics see it).
	maxToolName = 128
	// maxPromptName bounds the name of prompts/get (-32602 over it).
	maxPromptName = 1024
	// maxURI bounds the uri of resources/read, subscribe, unsubscribe,
	// resources/directory/read and skills/get (-32602 over it), and so
	// each subscription a session keeps.
	maxURI = 2048
	// maxSubscriptions and maxSubscriptionBytes bound the subscriptions
	// of one session, in number and in URI bytes (-32602 over either).
	maxSubscriptions     = 1024
	maxSubscriptionBytes = 64 << 10
	// maxProgressToken bounds a progress token, as sent (-32602 over it:
	// it is kept and echoed like an id, and a client whose token is
	// ignored would wait for progress that never comes).
	maxProgressToken = 256
	// maxCursor bounds the cursor of a list request (-32602 over it): a
	// cursor names a key (a name, a URI of at most maxURI, a task id), so
	// the server's own cursors are shorter.
	maxCursor = 4096
	// maxClientText bounds a text the client sends that the server keeps
	// or echoes, such as the reason of notifications/cancelled (which
	// becomes the request's cancel cause): cut on a UTF-8 boundary.
	maxClientText = 256
	// DefaultMaxResultBytes is the default bound on the encoded result of
	// a tools/call, resources/read, prompts/get or completion/complete
	// ([WithMaxResultBytes]): a result over it is answered as an error
	// that names the bound. 4 MiB holds any text or image a model can
	// use, yet keeps one request from pushing hundreds of megabytes
	// through the server.
	DefaultMaxResultBytes = 4 << 20
	// maxValidatedNesting bounds how deep a value validated against a
	// recursive schema (one whose subschemas refer back to themselves
	// through properties or items, as trees do) may nest its arrays and
	// objects: deeper ones are refused unread (errTooDeep). The validator
	// copies the value's location into the result of each level it fails
	// (jsonschema-go copied the whole text so far), so an invalid value's
	// cost grows with the square of its depth (docs/limits.md has the
	// figures).
	maxValidatedNesting = 128
)

// errTooDeep refuses a value that nests deeper than maxValidatedNesting.
var errTooDeep = fmt.Errorf("the value nests its arrays and objects more than %d deep, deeper than a recursive schema is validated", maxValidatedNesting)

// truncateUTF8 returns s cut to at most n bytes, on a UTF-8 boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// WithMaxResultBytes bounds at n bytes the encoded result of every
// tools/call (unless its tool sets [Tool.MaxResultBytes]), resources/read,
// prompts/get and completion/complete, and of a task: a tool's result
// over it becomes a tool error result (isError) saying so, any other a
// JSON-RPC error -32603 saying so; either is counted as
// [Outcome.ResultTooLarge]. A static skill's file is bounded when it is
// registered, by the skills' limits instead (see [Server.AddSkill]): its
// read writes what was encoded then and costs no memory per request. The
// default is [DefaultMaxResultBytes]; n <= 0 sets no bound.
func WithMaxResultBytes(n int) Option {
	return optionFunc(func(c *config) { c.maxResultBytes = n })
}

// bounded returns i with each string cut to maxClientInfoString bytes.
func (i Implementation) bounded() Implementation {
	i.Name = truncateUTF8(i.Name, maxClientInfoString)
	i.Title = truncateUTF8(i.Title, maxClientInfoString)
	i.Version = truncateUTF8(i.Version, maxClientInfoString)
	return i
}

// bounded returns c with what it keeps of the client's experimental and
// extension capabilities bounded (see maxCapabilityKeys).
func (c ClientCapabilities) bounded() ClientCapabilities {
	c.Experimental = boundedCapabilities(c.Experimental)
	c.Extensions = boundedCapabilities(c.Extensions)
	return c
}

// boundedCapabilities returns m, or, when m is over a bound, a new map of
// what is kept of it: its first keys in sorted order, each not over the key
// bound, with its value or, when that is too large, an empty object.
func boundedCapabilities(m map[string]any) map[string]any {
	within := len(m) <= maxCapabilityKeys
	for k, v := range m {
		if !within {
			break
		}
		within = len(k) <= maxCapabilityKey && jsonSizeWithin(v, maxCapabilityValue) >= 0
	}
	if within {
		return m
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if len(k) <= maxCapabilityKey {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	kept := make(map[string]any, min(len(keys), maxCapabilityKeys))
	for _, k := range keys[:min(len(keys), maxCapabilityKeys)] {
		v := m[k]
		if v != nil && jsonSizeWithin(v, maxCapabilityValue) < 0 {
			v = map[string]any{}
		}
		kept[k] = v
	}
	return kept
}

// jsonSizeWithin returns what is left of budget after about the size of
// v's JSON (v as encoding/json decodes into any), or a negative number as
// soon as it is spent; it never walks more of v than budget allows.
func jsonSizeWithin(v any, budget int) int {
	switch v := v.(type) {
	case nil, bool:
		return budget - 5
	case float64:
		return budget - 24 // the longest a float64 encodes to
	case string:
		return budget - len(v) - 2
	case []any:
		budget -= 2
		for _, e := range v {
			if budget = jsonSizeWithin(e, budget-1); budget < 0 {
				return budget
			}
		}
		return budget
	case map[string]any:
		budget -= 2
		for k, e := range v {
			if budget = jsonSizeWithin(e, budget-len(k)-4); budget < 0 {
				return budget
			}
		}
		return budget
	}
	return -1 // not what decoding makes: not kept
}

// overBound returns the error for a request of method whose target (the
// tool or prompt name, the resource URI) is over its bound, else nil.
func overBound(method string, p requestParams) *Error {
	switch {
	case method == "tools/call" && len(p.Name) > maxToolName:
		return Errorf(protocol.CodeInvalidParams, "tools/call: tool name over %d bytes", maxToolName)
	case method == "prompts/get" && len(p.Name) > maxPromptName:
		return Errorf(protocol.CodeInvalidParams, "prompts/get: prompt name over %d bytes", maxPromptName)
	case len(p.URI) > maxURI && (method == "resources/read" || method == "resources/subscribe" || method == "resources/unsubscribe" ||
		method == "skills/get" || method == "resources/directory/read"):
		return Errorf(protocol.CodeInvalidParams, "%s: uri over %d bytes", method, maxURI)
	}
	return nil
}

// boundResult replaces resp, the answer to req with res, when its
// encoding is over req's bound: a tool's result by a tool error, which it
// returns as the result, and any other by a JSON-RPC error, which it
// returns as the error (both nil: within the bound). The result is encoded
// once, and only one over the bound is encoded twice.
func (ss *Session) boundResult(resp *transport.Response, req *Request, res any) (any, error) {
	limit := int(req.maxResult)
	if limit <= 0 || len(resp.Result) <= limit {
		return nil, nil
	}
	if _, ok := res.(*CallToolResult); ok {
		r := resultTooLarge(len(resp.Result), limit)
		*resp = transport.Response{}
		ss.buildResponse(resp, req, r, nil)
		return r, nil
	}
	if req.Method == "tools/call" {
		return nil, nil // such as the task a call created
	}
	if resp.Shared {
		return nil, nil // a static skill file's, encoded and bounded when registered
	}
	err := &Error{ // no error wrapped: a refusal, not a bug to record
		Code:    protocol.CodeInternal,
		Message: fmt.Sprintf("result too large: %d bytes encoded, over the limit of %d bytes", len(resp.Result), limit),
	}
	*resp = transport.Response{}
	ss.buildResponse(resp, req, nil, err)
	return nil, err
}

// resultBound returns the bound on the encoded result of a request, n
// bytes ([WithMaxResultBytes]) as Request.maxResult holds it.
func resultBound(n int) int32 {
	return int32(min(max(n, 0), math.MaxInt32))
}

// resultTooLarge is the tool error result that answers a call whose result
// of size bytes is over limit.
func resultTooLarge(size, limit int) *CallToolResult {
	text := fmt.Sprintf("result too large: %d bytes encoded, over the limit of %d bytes", size, limit)
	return &CallToolResult{Content: []Content{&TextContent{Text: text}}, IsError: true}
}

// maxResult returns the bound on the results of rt: its own, else def.
func (rt *registeredTool) maxResult(def int) int {
	if rt.tool.MaxResultBytes != 0 {
		return rt.tool.MaxResultBytes
	}
	return def
}

// maxResult returns the bound on t's result: its tool's, else def.
func (t *task) maxResult(def int) int {
	if t.tool != nil && t.tool.MaxResultBytes != 0 {
		return t.tool.MaxResultBytes
	}
	return def
}
