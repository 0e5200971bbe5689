package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
)

// ID is a JSON-RPC request id: a string or an integer. The zero ID is "no id":
// it marks a notification and is never valid on a request. ID is comparable and
// may be used as a map key; IDs of different kinds never compare equal, so the
// string "1" and the integer 1 are distinct ids, as JSON-RPC requires.
type ID struct {
	str  string
	num  int64
	kind idKind
}

type idKind uint8

const (
	idNone idKind = iota
	idInt
	idString
)

// Int64ID returns an integer id.
func Int64ID(n int64) ID { return ID{num: n, kind: idInt} }

// StringID returns a string id.
func StringID(s string) ID { return ID{str: s, kind: idString} }

// IsValid reports whether id holds a string or an integer.
func (id ID) IsValid() bool { return id.kind != idNone }

// IsString reports whether id is a string id.
func (id ID) IsString() bool { return id.kind == idString }

// String returns the id as text: the integer in decimal, the string as is, or
// the empty string for the zero ID. It is the form telemetry records
// (jsonrpc.request.id), not the wire form.
func (id ID) String() string {
	switch id.kind {
	case idInt:
		return strconv.FormatInt(id.num, 10)
	case idString:
		return id.str
	default:
		return ""
	}
}

// AppendText appends the id as String returns it, without making the
// string (encoding.TextAppender); it never fails.
func (id ID) AppendText(b []byte) ([]byte, error) {
	switch id.kind {
	case idInt:
		return strconv.AppendInt(b, id.num, 10), nil
	case idString:
		return append(b, id.str...), nil
	default:
		return b, nil
	}
}

// MarshalJSON encodes the id; the zero ID encodes as null, which is only ever
// correct in an error response to a message whose id could not be read.
func (id ID) MarshalJSON() ([]byte, error) { return id.appendJSON(nil), nil }

func (id ID) appendJSON(b []byte) []byte {
	switch id.kind {
	case idInt:
		return strconv.AppendInt(b, id.num, 10)
	case idString:
		return jsonscan.AppendString(b, id.str)
	default:
		return append(b, "null"...)
	}
}

var errBadID = errors.New("id must be a string or an integer")

// UnmarshalJSON decodes a string or integer id. It rejects null, fractions,
// exponents, booleans, objects and arrays.
func (id *ID) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return errBadID
	}
	switch c := data[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("%w: %w", errBadID, err)
		}
		*id = StringID(s)
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		n, err := strconv.ParseInt(string(data), 10, 64)
		if err != nil {
			return fmt.Errorf("%w: %s", errBadID, data)
		}
		*id = Int64ID(n)
		return nil
	default:
		return errBadID
	}
}
