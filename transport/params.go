package transport

import "github.com/vigil-mcp/vigil/internal/jsonscan"

// ParamMembers are the members of a request's params that more than one
// layer reads: a transport, to check a request's headers against its body
// (Streamable HTTP's 2026-07-28 Mcp-Name and _meta checks), and the server,
// to route, trace and serve it. [Request.Members] splits them from Params in
// one pass. Each is the member's raw JSON value, aliasing Params, nil when
// absent; of a repeated member, the last one.
type ParamMembers struct {
	Name      []byte // name: the tool of tools/call, the prompt of prompts/get
	URI       []byte // uri: the resource of resources/read and (un)subscribe
	TaskID    []byte // taskId: the task of tasks/get, tasks/update, tasks/cancel
	Meta      []byte // _meta
	Arguments []byte // arguments
	Task      []byte // task: a tools/call's request to run as a task
	// Others says params has members besides these six.
	Others bool
}

// paramsSplit is what [Request.Members] found, kept in the Request, and
// the members of params._meta, which the decoder may have split too.
type paramsSplit struct {
	members ParamMembers
	state   splitState
	meta    metaSplit
}

// maxHeldMeta is how many members of params._meta a decoded Request holds:
// the 2026-07-28 protocol version and client capabilities, with room for
// a client's info and a progress token. A _meta with more is read again
// by each reader.
const maxHeldMeta = 4

// metaSplit holds the members of params._meta, in order, escapes decoded,
// when held is true: the decoder, which checks every byte of a message
// anyway, took them as it went (see decoded.check), and the transport that
// checks them against its headers and the server that reads them need
// not pass over _meta again.
type metaSplit struct {
	held    bool
	n       uint8
	members [maxHeldMeta]rawMember
}

// rawMember is a JSON object's member: its name, decoded, and raw value.
type rawMember struct{ key, val []byte }

// add appends a member; past maxHeldMeta, what is held is not all of
// _meta.
func (m *metaSplit) add(key, val []byte) {
	if int(m.n) == maxHeldMeta {
		m.held = false
		return
	}
	m.members[m.n] = rawMember{key, val}
	m.n++
}

type splitState uint8

const (
	notSplit    splitState = iota
	splitObject            // Params is an object: members holds its members
	splitNone              // Params is absent or not an object
)

// Members returns the members of r's Params that [ParamMembers] names; ok
// is false when Params is absent or not a JSON object. Params must be valid
// JSON, as in a decoded Request. The first call splits Params and r keeps
// what it found, which later calls return: the transport that reads a
// member first spares the server a second pass over Params, so Params must
// not change once Members was called. A Request from [DecodeOwnedMessage]
// comes split: its params were split as the message was checked. Like the
// rest of r, it is not safe for concurrent use: a request is read by one
// goroutine at a time, its transport's and then its session's.
func (r *Request) Members() (m ParamMembers, ok bool) {
	if r.split.state == notSplit {
		r.split.members, r.split.state = splitParams(r.Params)
	}
	return r.split.members, r.split.state == splitObject
}

// splitParams returns the members of params and whether it is an object.
// It returns the members alone, not a paramsSplit, whose copy would take a
// large frame on a request's deepest path (docs/limits.md, "The request's
// stack").
func splitParams(params []byte) (ParamMembers, splitState) {
	var m ParamMembers
	if len(params) == 0 || params[0] != '{' || !jsonscan.EachMember(params, m.set) {
		return ParamMembers{}, splitNone
	}
	return m, splitObject
}

// set takes val for the member of params named key.
func (m *ParamMembers) set(key, val []byte) {
	switch string(key) {
	case "name":
		m.Name = val
	case "uri":
		m.URI = val
	case "taskId":
		m.TaskID = val
	case "_meta":
		m.Meta = val
	case "arguments":
		m.Arguments = val
	case "task":
		m.Task = val
	default:
		m.Others = true
	}
}

// EachMeta calls f with the name (decoded when written with escapes) and
// raw value of each member of r's params._meta, in order, repeated
// members included, as jsonscan.EachMember on [ParamMembers].Meta does; ok is
// false when params or _meta is absent or not an object. A Request from
// [DecodeOwnedMessage] holds the members of a small _meta, split as the
// message was checked: there is no second pass over it.
func (r *Request) EachMeta(f func(key, val []byte)) (ok bool) {
	m, ok := r.Members()
	if !ok || m.Meta == nil {
		return false
	}
	if ms := &r.split.meta; ms.held {
		for _, mm := range ms.members[:ms.n] {
			f(mm.key, mm.val)
		}
		return true
	}
	return jsonscan.EachMember(m.Meta, f)
}
