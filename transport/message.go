package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Message is one JSON-RPC message: a [*Request] (which is a notification when
// its ID is the zero ID), a [*Response], a [Batch] (read side only) or a
// [ResponseBatch] (write side only); or an [*Abandoned] event (read side,
// never on the wire).
type Message interface{ isMessage() }

// Abandoned is an event a transport delivers through Read, not a message on
// the wire: the answer to request ID can no longer be delivered (its stream
// closed), though the connection lives on. The receiver cancels the request;
// Err says why and wraps [ErrStreamGone].
type Abandoned struct {
	ID  ID
	Err error
}

// Request is a JSON-RPC request, or a notification when ID is the zero ID.
type Request struct {
	ID     ID
	Method string
	Params json.RawMessage // nil when absent; otherwise an object or an array

	split paramsSplit // see Members
	wire  []byte      // see Freeze
}

// IsNotification reports whether r has no id.
func (r *Request) IsNotification() bool { return !r.ID.IsValid() }

// Freeze encodes r once, for a message written to many peers (a
// notification to every session): [AppendMessage] then copies that
// encoding instead of encoding r again. r must not be modified afterwards.
func (r *Request) Freeze() error {
	wire, err := AppendMessage(nil, r)
	if err == nil {
		r.wire = wire
	}
	return err
}

// Response is a JSON-RPC response. Exactly one of Result and Error is set.
type Response struct {
	ID     ID // the zero ID encodes as null: only for unreadable request ids
	Result json.RawMessage
	Error  *Error
	// Shared reports that Result is immutable and shared with other
	// responses (encoded once, ahead of any request, as a static skill
	// file's read is): writing it holds no memory of its own, so a
	// transport does not count it against a caller's byte budget. Nothing
	// may modify a shared Result.
	Shared bool
}

// Error is the JSON-RPC error object carried by a [Response].
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
	// HTTPStatus is the HTTP error status the error answered with, when
	// a client transport made it of one (a Streamable HTTP server's 401
	// or 503, with or without a JSON-RPC error body); 0 otherwise. It is
	// never encoded.
	HTTPStatus int `json:"-"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// Batch is a JSON-RPC batch as read: its elements are not yet decoded, so that
// the receiver can answer each malformed element on its own (decode each with
// [DecodeMessage]). MCP versions from 2025-06-18 on forbid batches.
type Batch []json.RawMessage

// ResponseBatch is the answer to a [Batch]: the responses to its requests, in
// any order. An empty ResponseBatch must not be written.
type ResponseBatch []*Response

func (*Request) isMessage()      {}
func (*Response) isMessage()     {}
func (Batch) isMessage()         {}
func (ResponseBatch) isMessage() {}
func (*Abandoned) isMessage()    {}

// DecodeError reports a frame that is not a valid JSON-RPC message. Code is
// [protocol.CodeParseError] or [protocol.CodeInvalidRequest]; ID is the message's id when it
// could be read (the error response must carry it), else the zero ID.
type DecodeError struct {
	Code protocol.Code
	ID   ID
	Err  error
}

func (e *DecodeError) Error() string { return "transport: decode: " + e.Err.Error() }
func (e *DecodeError) Unwrap() error { return e.Err }

// Reason classifies the refusal: [protocol.RejectParseError] for a frame that
// is not JSON, else [protocol.RejectInvalidRequest].
func (e *DecodeError) Reason() protocol.RejectReason {
	if e.Code == protocol.CodeParseError {
		return protocol.RejectParseError
	}
	return protocol.RejectInvalidRequest
}

var errLongID = fmt.Errorf("a string id must be at most %d bytes", maxIDBytes)

var (
	null      = []byte("null")
	version20 = []byte(`"2.0"`)
)

// isString reports whether raw is a JSON string equal to want.
func isString(raw []byte, want string) bool {
	s, ok := jsonscan.DecodeString(raw)
	return ok && s == want
}

// decodeMethod decodes a request's method: a JSON string. The names of
// the protocol's methods come from a table rather than a fresh string.
func decodeMethod(raw []byte) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		if m, ok := knownMethods[string(raw[1:len(raw)-1])]; ok {
			return m, true
		}
	}
	return jsonscan.DecodeString(raw)
}

// knownMethods maps each method of the protocol to its name, so that
// decoding one allocates nothing; it is never modified.
var knownMethods = func() map[string]string {
	names := []string{
		"initialize", "ping", "server/discover",
		"tools/list", "tools/call",
		"prompts/list", "prompts/get",
		"resources/list", "resources/templates/list", "resources/read",
		"resources/subscribe", "resources/unsubscribe",
		"completion/complete", "logging/setLevel",
		"tasks/get", "tasks/result", "tasks/list", "tasks/cancel",
		"subscriptions/listen",
		"sampling/createMessage", "elicitation/create", "roots/list",
		"notifications/initialized", "notifications/cancelled",
		"notifications/progress", "notifications/message",
		"notifications/roots/list_changed",
	}
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = n
	}
	return m
}()

func invalid(id ID, format string, args ...any) error {
	return &DecodeError{Code: protocol.CodeInvalidRequest, ID: id, Err: fmt.Errorf(format, args...)}
}

// trimJSONSpace trims the four characters JSON counts as white space, and
// nothing else (bytes.TrimSpace would also strip \v, \f, U+0085, U+00A0).
func trimJSONSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// DecodeMessage decodes one frame into a *Request, a *Response or a Batch.
// Any failure is a [*DecodeError]: invalid UTF-8 or invalid JSON is a parse
// error (one that would be a response but for its bytes that are not UTF-8
// carries the id it answers, so that its receiver can fail that request);
// valid JSON that is not a JSON-RPC 2.0 message (not an object, a
// wrong or missing "jsonrpc", a null or non-scalar request id, a response
// without an id, both result and error, an error object without an integer
// code and a string message, params that are not structured, an empty batch,
// a method over 128 bytes, a string id over 256 bytes, which is answered with
// id null) is an invalid request, carrying the message's id when it could be
// read.
// Member names are matched exactly (JSON-RPC is case-sensitive).
func DecodeMessage(data []byte) (Message, error) { return decodeMessage(data, true) }

// DecodeOwnedMessage is DecodeMessage for a frame that the caller hands
// over: the Params of a request and the Result and error data of a response
// may alias data rather than copy it, so data must not be modified
// afterwards. It saves a copy per message where each frame has a buffer of
// its own (an HTTP request body, say).
func DecodeOwnedMessage(data []byte) (Message, error) { return decodeMessage(data, false) }

// decodeMessage decodes one frame; clone: the raw members it keeps are
// copied out of data.
func decodeMessage(data []byte, clone bool) (Message, error) {
	if !utf8.Valid(data) {
		return nil, &DecodeError{Code: protocol.CodeParseError, ID: answered(data), Err: errors.New("message is not valid UTF-8")}
	}
	data = trimJSONSpace(data)
	if len(data) > 0 && data[0] == '[' {
		var b Batch
		if err := json.Unmarshal(data, &b); err != nil {
			return nil, &DecodeError{Code: protocol.CodeParseError, Err: err}
		}
		if len(b) == 0 {
			return nil, invalid(ID{}, "empty batch")
		}
		return b, nil
	}
	// One allocation for the members the validator takes and the Request
	// most messages a server reads are. An owned message's params stay
	// where they are: the members of params and of its _meta, taken in
	// the same pass, are kept in the Request.
	d := new(decoded)
	valid, isObject := d.check(data, !clone)
	fields := &d.top
	if !valid {
		var v any
		return nil, &DecodeError{Code: protocol.CodeParseError, Err: json.Unmarshal(data, &v)}
	}
	if !isObject {
		return nil, invalid(ID{}, "a message must be a JSON object")
	}
	rawID, hasID := fields.id, fields.id != nil
	var id ID
	var idErr error
	switch {
	case !hasID:
	case bytes.Equal(rawID, null):
		idErr = errors.New("id must not be null")
	default:
		idErr = id.UnmarshalJSON(rawID)
		if idErr == nil && id.kind == idString && len(id.str) > maxIDBytes {
			id, idErr = ID{}, errLongID
		}
	}
	if !bytes.Equal(fields.jsonrpc, version20) && !isString(fields.jsonrpc, "2.0") {
		return nil, invalid(id, `"jsonrpc" must be "2.0"`)
	}
	rawMethod, isRequest := fields.method, fields.method != nil
	result, hasResult := fields.result, fields.result != nil
	rawError, hasError := fields.error, fields.error != nil
	if isRequest {
		if idErr != nil {
			return nil, invalid(ID{}, "%w", idErr)
		}
		method, ok := decodeMethod(rawMethod)
		if !ok {
			return nil, invalid(id, `"method" must be a string`)
		}
		if method == "" {
			return nil, invalid(id, "method must not be empty")
		}
		if len(method) > maxMethodBytes {
			return nil, invalid(id, "method longer than %d bytes", maxMethodBytes)
		}
		if hasResult || hasError {
			return nil, invalid(id, "a request must not carry result or error")
		}
		params := fields.params
		if bytes.Equal(params, null) {
			params = nil
		}
		if clone {
			params = bytes.Clone(params) // the frame's buffer may be reused
		}
		if len(params) > 0 && params[0] != '{' && params[0] != '[' {
			return nil, invalid(id, "params must be an object or an array")
		}
		d.req.ID, d.req.Method, d.req.Params = id, method, params
		d.top = members{} // read: not kept alive with the request
		return &d.req, nil
	}
	switch {
	case !hasResult && !hasError:
		return nil, invalid(id, "message has neither method, result nor error")
	case hasResult && hasError:
		return nil, invalid(id, "a response must not carry both result and error")
	case !hasID:
		return nil, invalid(ID{}, "a response must carry an id")
	case idErr != nil && (!hasError || !bytes.Equal(rawID, null)): // only an error may answer "id": null
		return nil, invalid(ID{}, "%w", idErr)
	case hasResult:
		if clone {
			result = bytes.Clone(result)
		}
		return &Response{ID: id, Result: result}, nil
	}
	e, err := decodeErrorObject(rawError)
	if err != nil {
		return nil, invalid(id, "%w", err)
	}
	return &Response{ID: id, Error: e}, nil
}

// answered returns the id of the request data, a frame whose bytes are
// not UTF-8, answers when it is otherwise a response: its receiver can
// fail that request at once rather than leave it waiting. It returns the
// zero ID for anything else, a request among them (a parse error is
// answered with id null).
func answered(data []byte) ID {
	m, err := decodeMessage(bytes.ToValidUTF8(data, []byte("\uFFFD")), false)
	if r, ok := m.(*Response); err == nil && ok {
		return r.ID
	}
	return ID{}
}

// decodeErrorObject decodes a JSON-RPC error object, which must have an
// integer code and a string message.
func decodeErrorObject(raw json.RawMessage) (*Error, error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return nil, errors.New("error must be an object")
	}
	e := &Error{Data: bytes.Clone(fields["data"])}
	if bytes.Equal(fields["code"], null) || json.Unmarshal(fields["code"], &e.Code) != nil {
		return nil, errors.New("error code must be an integer")
	}
	if bytes.Equal(fields["message"], null) || json.Unmarshal(fields["message"], &e.Message) != nil {
		return nil, errors.New("error message must be a string")
	}
	return e, nil
}

// AppendMessage appends the compact wire form of m to b. Result and Params are
// copied as they are, so they must hold valid compact JSON (what
// [encoding/json.Marshal] produces).
func AppendMessage(b []byte, m Message) ([]byte, error) {
	switch m := m.(type) {
	case *Request:
		if m == nil {
			return b, errors.New("transport: nil request")
		}
		if m.wire != nil {
			return append(b, m.wire...), nil
		}
		b = append(b, `{"jsonrpc":"2.0",`...)
		if m.ID.IsValid() {
			b = append(b, `"id":`...)
			b = m.ID.appendJSON(b)
			b = append(b, ',')
		}
		b = append(b, `"method":`...)
		b = jsonscan.AppendString(b, m.Method)
		if len(m.Params) > 0 {
			b = append(b, `,"params":`...)
			b = append(b, m.Params...)
		}
		return append(b, '}'), nil
	case *Response:
		return appendResponse(b, m)
	case ResponseBatch:
		if len(m) == 0 {
			return b, errors.New("transport: empty response batch")
		}
		b = append(b, '[')
		for i, r := range m {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendResponse(b, r); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	default:
		return b, fmt.Errorf("transport: cannot encode %T", m)
	}
}

func appendResponse(b []byte, r *Response) ([]byte, error) {
	if r == nil {
		return b, errors.New("transport: nil response")
	}
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = r.ID.appendJSON(b)
	if r.Error != nil {
		b = append(b, `,"error":{"code":`...)
		b = fmt.Appendf(b, "%d", r.Error.Code)
		b = append(b, `,"message":`...)
		b = jsonscan.AppendString(b, r.Error.Message)
		if len(r.Error.Data) > 0 {
			b = append(b, `,"data":`...)
			b = append(b, r.Error.Data...)
		}
		return append(b, "}}"...), nil
	}
	if len(r.Result) == 0 {
		return b, errors.New("transport: response has neither result nor error")
	}
	if !r.ID.IsValid() {
		return b, errors.New("transport: a result response needs an id")
	}
	b = append(b, `,"result":`...)
	b = append(b, r.Result...)
	return append(b, '}'), nil
}
