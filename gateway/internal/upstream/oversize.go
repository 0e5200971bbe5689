package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/vigil-mcp/vigil/internal/oversize"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// TooLargeError is why a call failed whose answer was over the session's
// bound on a message (MaxMessageBytes): the answer was dropped unread,
// and the session lives on.
type TooLargeError struct {
	Size int64 // the answer's size in bytes; 0 when only known to be over Max
	Max  int   // the bound
}

func (e *TooLargeError) Error() string {
	if e.Size > 0 {
		return fmt.Sprintf("upstream: an answer of %d bytes, over the bound of %d bytes on a message", e.Size, e.Max)
	}
	return fmt.Sprintf("upstream: an answer over the bound of %d bytes on a message", e.Max)
}

// Unwrap returns [transport.ErrFrameTooLarge].
func (*TooLargeError) Unwrap() error { return transport.ErrFrameTooLarge }

// tooLarge returns the error Read returns for a message over the bound
// limit, of which what is known is given: whether it is a response, its id
// (the zero ID when none), its size (0 when unknown).
func tooLarge(response bool, id transport.ID, size int64, limit int) error {
	return &transport.DecodeError{Code: protocol.CodeInvalidRequest, ID: id, Err: &oversize.Error{Response: response, Size: size, Limit: limit, Frame: transport.ErrFrameTooLarge}}
}

// oversizeLine returns what a process's stdout Conn makes of a line over
// limit bytes (see [stdio.WithOversizeFrames]), of which it read the first
// bytes (head) and the last ones (tail). The message is attributed by
// what those show: the members before the large one (a response's id
// usually comes before its result), or its last member ({"result":...,
// "jsonrpc":"2.0","id":7}, as the TypeScript SDK writes it). A response
// whose id is found fails that call only; a request of the upstream is
// refused; a notification is dropped. A response whose id is in neither
// ends the session, as it cannot be told which call it answers.
func oversizeLine(limit int) stdio.OversizeFunc {
	return func(head, tail []byte, size int64) (transport.Message, error) {
		kind, id := frameOf(head)
		if !id.IsValid() {
			id = tailID(tail)
		}
		switch {
		case kind == kindResponse && !id.IsValid(), kind == kindUnknown:
			return nil, fmt.Errorf("upstream: %w: a message of %d bytes, over the bound of %d bytes, that names no call", transport.ErrFrameTooLarge, size, limit)
		case kind == kindResponse:
			return nil, tooLarge(true, id, size, limit)
		default: // a request with id, a notification without
			return nil, tooLarge(false, id, size, limit)
		}
	}
}

// The kinds of message frameOf tells apart.
const (
	kindUnknown = iota
	kindResponse
	kindRequest // a request or notification
)

// frameOf reads the members of the JSON object head begins, up to the
// first that tells a response ("result", "error") from a request
// ("method"), and returns that kind and the id among them when one was.
func frameOf(head []byte) (kind int, id transport.ID) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return kindUnknown, id
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return kind, id
		}
		switch key {
		case "id":
			if dec.Decode(&id) != nil {
				return kind, transport.ID{}
			}
		case "jsonrpc":
			if _, err := dec.Token(); err != nil {
				return kind, id
			}
		case "method":
			kind = kindRequest
			var method string
			if dec.Decode(&method) != nil {
				return kind, id
			}
		case "result", "error":
			return kindResponse, id
		default: // params, or a member no message has: the rest is unread
			return kind, id
		}
	}
	return kind, id
}

// lastID matches the end of a JSON-RPC message whose last member is its id
// (the jsonrpc member may follow it): an id inside a nested value would be
// followed by two closing braces or more, and one inside a string by a
// quote.
var lastID = regexp.MustCompile(`[{,]\s*"id"\s*:\s*(-?[0-9]+|"[^"\\]*")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?}\s*$`)

// tailID returns the id that tail, the end of a message, shows as the
// message's own; the zero ID when it shows none.
func tailID(tail []byte) transport.ID {
	var id transport.ID
	m := lastID.FindSubmatch(tail)
	if m == nil || json.Unmarshal(m[1], &id) != nil {
		return transport.ID{}
	}
	return id
}
