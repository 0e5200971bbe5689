package transport

import "github.com/vigil-mcp/vigil/internal/jsonscan"

// members holds the raw values of a JSON-RPC message's top-level members,
// as sub-slices of the frame. A nil field means the member is absent.
type members struct {
	jsonrpc, id, method, params, result, error []byte
}

// setDecoded takes val for the member named key, if it is one of m's.
func (m *members) setDecoded(key, val []byte) {
	switch string(key) { // no allocation: the compiler compares in place
	case "jsonrpc":
		m.jsonrpc = val
	case "id":
		m.id = val
	case "method":
		m.method = val
	case "params":
		m.params = val
	case "result":
		m.result = val
	case "error":
		m.error = val
	}
}

// decoded is what decodeMessage fills: the top-level members of a message
// and, when it is a request, the Request.
type decoded struct {
	req Request
	top members
}

// check is jsonscan.Valid of the frame data, and, in the same pass, takes
// into d the top-level members of data when it is an object (isObject
// false for another value) and, when split, the members of params when it
// is an object, and those of its _meta when that is an object of at most
// maxHeldMeta members (as splitParams and jsonscan.EachMember find them):
// d.req.split's state says whether it holds params' members. Of a
// repeated member, the last one wins.
func (d *decoded) check(data []byte, split bool) (valid, isObject bool) {
	var taken int
	if !split {
		valid, taken = jsonscan.ValidTaking(data, d)
		return valid, taken > 0
	}
	valid, taken = jsonscan.ValidTaking(data, d, "params", "_meta")
	switch ps := &d.req.split; {
	case taken < 2: // params is absent or not an object
		*ps = paramsSplit{}
	case taken < 3: // _meta is absent or not an object
		ps.meta = metaSplit{}
	}
	return valid, taken > 0
}

// Object readies d for the members of an object [decoded.check] takes: at
// level 1 params, at level 2 its _meta. It implements jsonscan.Taker.
func (d *decoded) Object(level int) {
	switch level {
	case 1:
		d.req.split.members, d.req.split.state = ParamMembers{}, splitObject
	case 2:
		d.req.split.meta = metaSplit{held: true}
	}
}

// Member takes a member of the message (level 0), of its params (1) or of
// params._meta (2). It implements jsonscan.Taker.
func (d *decoded) Member(level int, key, val []byte) {
	switch level {
	case 0:
		d.top.setDecoded(key, val)
	case 1:
		d.req.split.members.set(key, val)
	case 2:
		d.req.split.meta.add(key, val)
	}
}
