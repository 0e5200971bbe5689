package server

import (
	"encoding/json"
	"errors"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
)

// encodedSizeHint is about the length of r's JSON, for the buffer
// appendJSON writes into: the text items' lengths plus room for the rest,
// so that a small result does not take a large buffer (it is copied into
// the response's envelope after). What it cannot see coming (escapes, other
// content, structured content, _meta) the buffer grows for.
func (r *CallToolResult) encodedSizeHint() int {
	n := len(`{"content":[]}`) + len(`,"isError":true`)
	for _, c := range r.Content {
		t, ok := c.(*TextContent)
		if !ok {
			return 256
		}
		n += len(`{"type":"text","text":""},`) + len(t.Text) + len(t.Text)/8
	}
	if r.StructuredContent != nil || len(r.Meta) > 0 {
		n += 128
	}
	return n
}

// appendJSON appends r's compact JSON encoding: the hot path of every tool
// call, written by hand so that the common result (text items) costs no
// reflection and no re-validation. Other content blocks and the structured
// content go through encoding/json.
func (r *CallToolResult) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			b = append(b, ',')
		}
		if t, ok := c.(*TextContent); ok && t.Annotations == nil && t.Meta == nil {
			b = append(b, `{"type":"text","text":`...)
			b = jsonscan.AppendString(b, t.Text)
			b = append(b, '}')
			continue
		}
		raw, err := json.Marshal(c)
		if err != nil {
			return b, err
		}
		b = append(b, raw...)
	}
	b = append(b, ']')
	if r.StructuredContent != nil {
		raw, err := json.Marshal(r.StructuredContent)
		if err != nil {
			return b, err
		}
		b = append(b, `,"structuredContent":`...)
		b = append(b, raw...)
	}
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	if len(r.Meta) > 0 {
		raw, err := json.Marshal(r.Meta)
		if err != nil {
			return b, err
		}
		b = append(b, `,"_meta":`...)
		b = append(b, raw...)
	}
	return append(b, '}'), nil
}

// RawToolResult returns a tools/call result answered as raw, the result
// of another server relayed byte for byte (a gateway's): raw must be a
// JSON object with a content array; IsError is read from it, and the
// other fields stay empty. The 2026-07-28 era adds its members to it as
// to any result.
func RawToolResult(raw json.RawMessage) (*CallToolResult, error) {
	r := &CallToolResult{raw: raw}
	content := false
	if !jsonscan.Valid(raw) || !jsonscan.EachMember(raw, func(key, val []byte) {
		switch string(key) {
		case "content":
			content = len(val) > 0 && val[0] == '['
		case "isError":
			r.IsError = string(val) == "true"
		}
	}) || !content {
		return nil, errors.New("mcp: a tools/call result is a JSON object with a content array")
	}
	return r, nil
}

// marshal returns r's JSON: as it was sent (RawToolResult), or encoded.
func (r *CallToolResult) marshal() ([]byte, error) {
	if r.raw != nil {
		return r.raw, nil
	}
	return json.Marshal(r)
}
