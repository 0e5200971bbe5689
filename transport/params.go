package transport

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

// paramsSplit is what [Request.Members] found, kept in the Request.
type paramsSplit struct {
	members ParamMembers
	state   splitState
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
// not change once Members was called. Like the rest of r, it is not safe
// for concurrent use: a request is read by one goroutine at a time, its
// transport's and then its session's.
func (r *Request) Members() (m ParamMembers, ok bool) {
	if r.split.state == notSplit {
		r.split = splitParams(r.Params)
	}
	return r.split.members, r.split.state == splitObject
}

func splitParams(params []byte) paramsSplit {
	var s paramsSplit
	if len(params) == 0 || params[0] != '{' {
		s.state = splitNone
		return s
	}
	m := &s.members
	if !EachMember(params, func(key, val []byte) {
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
	}) {
		s.members = ParamMembers{}
		s.state = splitNone
		return s
	}
	s.state = splitObject
	return s
}
