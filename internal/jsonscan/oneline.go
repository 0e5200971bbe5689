package jsonscan

import (
	"bytes"
	"encoding/json"
)

// OneLine returns data, an encoded JSON message, without CR or LF, for a
// transport whose frame is a line (stdio) or whose field ends at either
// (an SSE event's data): in valid JSON a CR or LF is only ever white
// space (in a string it is escaped), so the message is compacted, only
// that white space going, and valid is true. Data on one line already is
// returned as it is, valid true, unchecked. Data that holds CR or LF and
// is not valid JSON is returned with each replaced by a space, and valid
// false. Params or results relayed as another peer sent them (a gateway's
// upstream, a raw tool result) may be indented, or hold a lone CR, which a
// reader of universal newlines (Python's text streams) takes for a line's
// end. data is not modified.
func OneLine(data []byte) (line []byte, valid bool) {
	if bytes.IndexByte(data, '\n') < 0 && bytes.IndexByte(data, '\r') < 0 {
		return data, true
	}
	var compact bytes.Buffer
	compact.Grow(len(data))
	if json.Compact(&compact, data) == nil {
		return compact.Bytes(), true
	}
	out := bytes.Clone(data)
	for i, c := range out {
		if c == '\n' || c == '\r' {
			out[i] = ' '
		}
	}
	return out, false
}
