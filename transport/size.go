package transport

import "github.com/vigil-mcp/vigil/internal/jsonscan"

// EncodedSize returns the length of AppendMessage's encoding of m, without
// encoding it (0 for a message AppendMessage refuses). A Batch, which is
// only ever read, is measured as its raw elements joined into an array.
// Byte counters use it to measure traffic without encoding twice.
func EncodedSize(m Message) int {
	switch m := m.(type) {
	case *Request:
		if m == nil {
			return 0
		}
		if m.wire != nil {
			return len(m.wire)
		}
		n := len(`{"jsonrpc":"2.0",`) + len(`"method":`) + jsonscan.StringSize(m.Method) + len(`}`)
		if m.ID.IsValid() {
			n += len(`"id":`) + idSize(m.ID) + len(`,`)
		}
		if len(m.Params) > 0 {
			n += len(`,"params":`) + len(m.Params)
		}
		return n
	case *Response:
		return responseSize(m)
	case ResponseBatch:
		if len(m) == 0 {
			return 0
		}
		n := 2 + len(m) - 1
		for _, r := range m {
			s := responseSize(r)
			if s == 0 {
				return 0
			}
			n += s
		}
		return n
	case Batch:
		n := 2 + max(len(m)-1, 0)
		for _, raw := range m {
			n += len(raw)
		}
		return n
	}
	return 0
}

func responseSize(r *Response) int {
	if r == nil {
		return 0
	}
	n := len(`{"jsonrpc":"2.0","id":`) + idSize(r.ID)
	if r.Error != nil {
		n += len(`,"error":{"code":`) + intSize(r.Error.Code) +
			len(`,"message":`) + jsonscan.StringSize(r.Error.Message) + len(`}}`)
		if len(r.Error.Data) > 0 {
			n += len(`,"data":`) + len(r.Error.Data)
		}
		return n
	}
	if len(r.Result) == 0 || !r.ID.IsValid() {
		return 0
	}
	return n + len(`,"result":`) + len(r.Result) + len(`}`)
}

func idSize(id ID) int {
	switch id.kind {
	case idInt:
		return intSize(id.num)
	case idString:
		return jsonscan.StringSize(id.str)
	default:
		return len("null")
	}
}

// intSize is len(strconv.FormatInt(n, 10)), counted without formatting
// (which allocates for n outside [0, 100)).
func intSize(n int64) int {
	size, u := 1, uint64(n)
	if n < 0 {
		size, u = 2, -u
	}
	for ; u >= 10; u /= 10 {
		size++
	}
	return size
}
