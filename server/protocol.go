package server

import (
	"encoding/json"
	"slices"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// negotiate returns the version to answer with: the client's if it is one
// of the session era's, else the newest of them.
func negotiate(requested string) string {
	if isSessionVersion(requested) {
		return requested
	}
	return protocol.Version20251125
}

// isSessionVersion reports whether v is a protocol version of the session
// era: one served, but not the stateless 2026-07-28.
func isSessionVersion(v string) bool {
	return v != protocol.Version20260728 && slices.Contains(protocol.Versions(), v)
}

// Implementation names a client or server (clientInfo, serverInfo).
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// ClientCapabilities is what the client declared in initialize. A nil field
// means the capability is absent.
type ClientCapabilities struct {
	Roots        *RootsCapability       `json:"roots,omitempty"`
	Sampling     *SamplingCapability    `json:"sampling,omitempty"`
	Elicitation  *ElicitationCapability `json:"elicitation,omitempty"`
	Experimental map[string]any         `json:"experimental,omitempty"`
	// Extensions are the extensions the client supports (2026-07-28), by
	// identifier, such as [ExtensionTasks].
	Extensions map[string]any `json:"extensions,omitempty"`
}

// RootsCapability is the client's roots capability.
type RootsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// SamplingCapability is the client's sampling capability.
type SamplingCapability struct {
	Context *struct{} `json:"context,omitempty"`
	Tools   *struct{} `json:"tools,omitempty"`
}

// ElicitationCapability is the client's elicitation capability. An empty
// object means form mode only.
type ElicitationCapability struct {
	Form *struct{} `json:"form,omitempty"`
	URL  *struct{} `json:"url,omitempty"`
}

// serverCapabilities is what the server declares in initialize.
type serverCapabilities struct {
	Tools        *listChangedCapability `json:"tools,omitempty"`
	Resources    *resourcesCapability   `json:"resources,omitempty"`
	Prompts      *listChangedCapability `json:"prompts,omitempty"`
	Logging      *struct{}              `json:"logging,omitempty"`
	Completions  *struct{}              `json:"completions,omitempty"`
	Tasks        map[string]any         `json:"tasks,omitempty"`
	Extensions   map[string]any         `json:"extensions,omitempty"`
	Experimental map[string]any         `json:"experimental,omitempty"`
}

// resourcesCapability is the server's resources capability.
type resourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

// listChangedCapability is a capability that may announce list changes.
type listChangedCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

type initializeParams struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ClientCapabilities `json:"capabilities"`
	ClientInfo      Implementation     `json:"clientInfo"`
}

type initializeResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"` // serverCapabilities, encoded (capabilities.go)
	ServerInfo      Implementation  `json:"serverInfo"`
	Instructions    string          `json:"instructions,omitempty"`
}

type cancelledParams struct {
	RequestID json.RawMessage `json:"requestId"`
	Reason    string          `json:"reason,omitempty"`
}

// readRequestParams reads the members of m's params the core needs for
// every request, from the (already validated) object split in place
// ([transport.Request.Members]) rather than decoded by reflection, _meta
// into meta (in place: a RequestMeta is large). ok is false when params is
// not an object or a member has the wrong type (the method's handler then
// reports it); meta is then left empty.
func readRequestParams(m *transport.Request, meta *RequestMeta) (p requestParams, ok bool) {
	v, ok := m.Members() // shared with the transport, which may have split params already
	if !ok {
		return p, false
	}
	if v.Name != nil {
		if p.Name, ok = jsonscan.DecodeString(v.Name); !ok {
			return p, false
		}
	}
	if v.URI != nil {
		if p.URI, ok = jsonscan.DecodeString(v.URI); !ok {
			return p, false
		}
	}
	if v.Meta != nil && string(v.Meta) != "null" {
		if ok = readMeta(m, meta); !ok {
			*meta = RequestMeta{}
			return p, false
		}
	}
	p.Arguments, p.Task = v.Arguments, v.Task
	// A retried round's members are among the others; most requests have
	// none, and their params are not read again.
	p.Round = v.Others && !plainRound(m.Params)
	return p, true
}

// readMeta reads m's params._meta, valid JSON as part of a decoded
// message, into meta, as json.Unmarshal into a map[string]json.RawMessage
// would read it (the last of a repeated name wins), but with the values
// aliasing Params and the usual names not copied: no allocation for up to
// heldMetaMembers members. The members come from the decoder's pass when
// it kept them (transport.Request.EachMeta). ok is false when _meta is
// not an object.
func readMeta(m *transport.Request, meta *RequestMeta) (ok bool) {
	return m.EachMeta(func(key, val []byte) {
		meta.set(metaKey(key), val[:len(val):len(val)])
	})
}

// metaKey returns key as a string, the constant one for the keys most
// requests carry.
func metaKey(key []byte) string {
	switch string(key) { // no allocation: the compiler compares in place
	case vocab.MetaProtocolVersion:
		return vocab.MetaProtocolVersion
	case vocab.MetaClientCapabilities:
		return vocab.MetaClientCapabilities
	case vocab.MetaClientInfo:
		return vocab.MetaClientInfo
	case vocab.MetaLogLevel:
		return vocab.MetaLogLevel
	case vocab.MetaProgressToken:
		return vocab.MetaProgressToken
	case "traceparent":
		return "traceparent"
	case "tracestate":
		return "tracestate"
	case "baggage":
		return "baggage"
	}
	return string(key)
}

// requestParams holds the members of params the core reads for every
// request (filled by readRequestParams): the target's name or URI and the
// raw arguments and task of tools/call.
type requestParams struct {
	Name      string
	URI       string
	Arguments json.RawMessage
	Task      json.RawMessage
	// Round says params has a member of a retried round, inputResponses
	// or requestState, under any case (see plainRound).
	Round bool
}
