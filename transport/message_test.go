package transport_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func TestDecodeMessageValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want transport.Message
	}{
		{
			name: "request with int id and object params",
			in:   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
			want: &transport.Request{ID: transport.Int64ID(1), Method: "tools/call", Params: raw(`{"name":"echo"}`)},
		},
		{
			name: "request with string id and array params",
			in:   `{"jsonrpc":"2.0","id":"abc","method":"sum","params":[1,2]}`,
			want: &transport.Request{ID: transport.StringID("abc"), Method: "sum", Params: raw(`[1,2]`)},
		},
		{
			name: "request with empty string id is not a notification",
			in:   `{"jsonrpc":"2.0","id":"","method":"ping"}`,
			want: &transport.Request{ID: transport.StringID(""), Method: "ping"},
		},
		{
			name: "request with negative and large ids",
			in:   `{"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"}`,
			want: &transport.Request{ID: transport.Int64ID(-9223372036854775808), Method: "ping"},
		},
		{
			name: "members in any order with whitespace",
			in:   " \r\n\t{ \"params\" : { \"a\" : 1 } , \"method\" : \"m\" , \"id\" : 9 , \"jsonrpc\" : \"2.0\" }\r\n",
			want: &transport.Request{ID: transport.Int64ID(9), Method: "m", Params: raw(`{ "a" : 1 }`)},
		},
		{
			name: "unknown members are ignored",
			in:   `{"jsonrpc":"2.0","id":2,"method":"m","extra":{"x":[1]}}`,
			want: &transport.Request{ID: transport.Int64ID(2), Method: "m"},
		},
		{
			name: "escaped method",
			in:   `{"jsonrpc":"2.0","id":3,"method":"t\u00e9st\/x"}`,
			want: &transport.Request{ID: transport.Int64ID(3), Method: "tést/x"},
		},
		{
			name: "notification",
			in:   `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			want: &transport.Request{Method: "notifications/initialized"},
		},
		{
			name: "notification with params",
			in:   `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
			want: &transport.Request{Method: "notifications/progress", Params: raw(`{"progress":1}`)},
		},
		{
			name: "null params are absent on a request",
			in:   `{"jsonrpc":"2.0","id":4,"method":"m","params":null}`,
			want: &transport.Request{ID: transport.Int64ID(4), Method: "m"},
		},
		{
			name: "null params are absent on a notification",
			in:   `{"jsonrpc":"2.0","method":"n","params":null}`,
			want: &transport.Request{Method: "n"},
		},
		{
			name: "empty params object and array are kept",
			in:   `{"jsonrpc":"2.0","id":5,"method":"m","params":{}}`,
			want: &transport.Request{ID: transport.Int64ID(5), Method: "m", Params: raw(`{}`)},
		},
		{
			name: "response with result",
			in:   `{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}`,
			want: &transport.Response{ID: transport.Int64ID(7), Result: raw(`{"tools":[]}`)},
		},
		{
			name: "response with null result",
			in:   `{"jsonrpc":"2.0","id":"r","result":null}`,
			want: &transport.Response{ID: transport.StringID("r"), Result: raw(`null`)},
		},
		{
			name: "response with scalar result",
			in:   `{"jsonrpc":"2.0","id":8,"result":"ok"}`,
			want: &transport.Response{ID: transport.Int64ID(8), Result: raw(`"ok"`)},
		},
		{
			name: "error response",
			in:   `{"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"method not found"}}`,
			want: &transport.Response{ID: transport.Int64ID(9), Error: &transport.Error{Code: -32601, Message: "method not found"}},
		},
		{
			name: "error response with data",
			in:   `{"jsonrpc":"2.0","id":"e","error":{"code":-32602,"message":"bad","data":{"field":"x"}}}`,
			want: &transport.Response{
				ID:    transport.StringID("e"),
				Error: &transport.Error{Code: -32602, Message: "bad", Data: raw(`{"field":"x"}`)},
			},
		},
		{
			name: "error response with null id",
			in:   `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
			want: &transport.Response{Error: &transport.Error{Code: -32700, Message: "parse error"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := transport.DecodeMessage([]byte(tc.in))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestDecodeMessageDoesNotAliasInput(t *testing.T) {
	t.Parallel()
	in := []byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"b"}}`)
	got, err := transport.DecodeMessage(in)
	require.NoError(t, err)
	for i := range in {
		in[i] = 'X'
	}
	req, ok := got.(*transport.Request)
	require.True(t, ok)
	assert.JSONEq(t, `{"a":"b"}`, string(req.Params))
	assert.Equal(t, "m", req.Method)
}

func TestDecodeMessageBatch(t *testing.T) {
	t.Parallel()
	in := " \n[ {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"} ,5, \"x\",{\"jsonrpc\":\"2.0\",\"method\":\"n\"},null ]\n"
	got, err := transport.DecodeMessage([]byte(in))
	require.NoError(t, err)
	batch, ok := got.(transport.Batch)
	require.True(t, ok, "got %T", got)
	want := transport.Batch{
		raw(`{"jsonrpc":"2.0","id":1,"method":"a"}`),
		raw(`5`),
		raw(`"x"`),
		raw(`{"jsonrpc":"2.0","method":"n"}`),
		raw(`null`),
	}
	require.Equal(t, want, batch)

	// Each element decodes on its own, so a bad element is answered alone.
	first, err := transport.DecodeMessage(batch[0])
	require.NoError(t, err)
	assert.Equal(t, &transport.Request{ID: transport.Int64ID(1), Method: "a"}, first)
	_, err = transport.DecodeMessage(batch[1])
	de, ok := errors.AsType[*transport.DecodeError](err)
	require.True(t, ok, "err = %v", err)
	assert.Equal(t, protocol.CodeInvalidRequest, de.Code)
	last, err := transport.DecodeMessage(batch[3])
	require.NoError(t, err)
	assert.Equal(t, &transport.Request{Method: "n"}, last)
}

func TestDecodeMessageErrors(t *testing.T) {
	t.Parallel()
	const (
		parse   = protocol.CodeParseError
		invalid = protocol.CodeInvalidRequest
	)
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	tests := []struct {
		name    string
		in      string
		code    protocol.Code
		id      transport.ID
		wantMsg string // the wrapped error's text; empty: not checked
	}{
		{name: "empty input", in: ``, code: parse},
		{name: "whitespace only", in: " \n\t ", code: parse},
		{name: "truncated object", in: `{"jsonrpc":"2.0","method":"m"`, code: parse},
		{name: "bare word", in: `hello`, code: parse},
		{name: "trailing garbage", in: `{"jsonrpc":"2.0","method":"m"}x`, code: parse},
		{name: "two objects", in: `{"jsonrpc":"2.0","method":"m"} {}`, code: parse},
		{name: "single quotes", in: `{'jsonrpc':'2.0'}`, code: parse},
		{name: "trailing comma", in: `{"jsonrpc":"2.0","method":"m",}`, code: parse},
		{name: "truncated batch", in: `[1,`, code: parse},
		{name: "deep nesting", in: deep, code: parse},
		{
			name: "invalid UTF-8 in a string", in: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
			code: parse, wantMsg: "message is not valid UTF-8",
		},
		{
			name: "invalid UTF-8 in a batch", in: "[{\"jsonrpc\":\"2.0\",\"method\":\"a\xc3\"}]",
			code: parse, wantMsg: "message is not valid UTF-8",
		},
		{name: "invalid UTF-8 outside strings", in: "\xfe{}", code: parse, wantMsg: "message is not valid UTF-8"},
		{
			name: "invalid UTF-8 in a response carries its id", in: "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"t\":\"\xff\"}}",
			code: parse, id: transport.Int64ID(7), wantMsg: "message is not valid UTF-8",
		},
		{name: "empty batch", in: `[]`, code: invalid, wantMsg: "empty batch"},
		{name: "empty batch with whitespace", in: " [ \n ] ", code: invalid, wantMsg: "empty batch"},
		{
			name: "missing jsonrpc recovers int id", in: `{"id":1,"method":"m"}`,
			code: invalid, id: transport.Int64ID(1), wantMsg: `"jsonrpc" must be "2.0"`,
		},
		{
			name: "wrong jsonrpc recovers string id", in: `{"jsonrpc":"1.0","id":"a","method":"m"}`,
			code: invalid, id: transport.StringID("a"), wantMsg: `"jsonrpc" must be "2.0"`,
		},
		{
			name: "null jsonrpc recovers id", in: `{"jsonrpc":null,"id":-3,"method":"m"}`,
			code: invalid, id: transport.Int64ID(-3), wantMsg: `"jsonrpc" must be "2.0"`,
		},
		{
			name: "padded jsonrpc", in: `{"jsonrpc":"2.0 ","id":4,"method":"m"}`,
			code: invalid, id: transport.Int64ID(4), wantMsg: `"jsonrpc" must be "2.0"`,
		},
		{
			name: "missing jsonrpc on a response recovers id", in: `{"id":"r","result":1}`,
			code: invalid, id: transport.StringID("r"), wantMsg: `"jsonrpc" must be "2.0"`,
		},
		{
			name: "missing jsonrpc with null id", in: `{"id":null,"method":"m"}`,
			code: invalid, wantMsg: `"jsonrpc" must be "2.0"`,
		},
		{
			name: "missing jsonrpc with fractional id", in: `{"id":1.5,"method":"m"}`,
			code: invalid, wantMsg: `"jsonrpc" must be "2.0"`,
		},
		{
			name: "jsonrpc not a string", in: `{"jsonrpc":2,"method":"m"}`,
			code: invalid, wantMsg: `"jsonrpc" must be "2.0"`,
		},
		{
			name: "jsonrpc not a string recovers id", in: `{"jsonrpc":2.0,"id":1,"method":"m"}`,
			code: invalid, id: transport.Int64ID(1), wantMsg: `"jsonrpc" must be "2.0"`,
		},
		{
			name: "member names are case-sensitive", in: `{"JSONRPC":"2.0","ID":1,"METHOD":"m"}`,
			code: invalid, wantMsg: `"jsonrpc" must be "2.0"`,
		},
		{
			name: "method member name is case-sensitive", in: `{"jsonrpc":"2.0","id":1,"Method":"m"}`,
			code: invalid, id: transport.Int64ID(1), wantMsg: "message has neither method, result nor error",
		},
		{
			name: "method not a string", in: `{"jsonrpc":"2.0","method":5}`,
			code: invalid, wantMsg: `"method" must be a string`,
		},
		{
			name: "method not a string recovers id", in: `{"jsonrpc":"2.0","id":"x","method":5}`,
			code: invalid, id: transport.StringID("x"), wantMsg: `"method" must be a string`,
		},
		{
			name: "method an object", in: `{"jsonrpc":"2.0","id":2,"method":{}}`,
			code: invalid, id: transport.Int64ID(2), wantMsg: `"method" must be a string`,
		},
		{
			name: "null id on a request", in: `{"jsonrpc":"2.0","id":null,"method":"m"}`,
			code: invalid, wantMsg: "id must not be null",
		},
		{name: "fractional id on a request", in: `{"jsonrpc":"2.0","id":1.5,"method":"m"}`, code: invalid},
		{name: "exponent id on a request", in: `{"jsonrpc":"2.0","id":1e3,"method":"m"}`, code: invalid},
		{name: "bool id on a request", in: `{"jsonrpc":"2.0","id":true,"method":"m"}`, code: invalid},
		{name: "object id on a request", in: `{"jsonrpc":"2.0","id":{},"method":"m"}`, code: invalid},
		{name: "array id on a request", in: `{"jsonrpc":"2.0","id":[1],"method":"m"}`, code: invalid},
		{name: "out of range id on a request", in: `{"jsonrpc":"2.0","id":9223372036854775808,"method":"m"}`, code: invalid},
		{name: "null id on a result response", in: `{"jsonrpc":"2.0","id":null,"result":1}`, code: invalid},
		{name: "fractional id on a response", in: `{"jsonrpc":"2.0","id":2.5,"result":1}`, code: invalid},
		{
			name: "fractional id on an error response",
			in:   `{"jsonrpc":"2.0","id":2.5,"error":{"code":1,"message":"m"}}`, code: invalid,
		},
		{
			name: "empty method", in: `{"jsonrpc":"2.0","id":6,"method":""}`,
			code: invalid, id: transport.Int64ID(6), wantMsg: "method must not be empty",
		},
		{
			name: "request carrying a result", in: `{"jsonrpc":"2.0","id":7,"method":"m","result":1}`,
			code: invalid, id: transport.Int64ID(7), wantMsg: "a request must not carry result or error",
		},
		{
			name: "request carrying an error", in: `{"jsonrpc":"2.0","id":7,"method":"m","error":{"code":1,"message":"x"}}`,
			code: invalid, id: transport.Int64ID(7), wantMsg: "a request must not carry result or error",
		},
		{
			name: "params a string", in: `{"jsonrpc":"2.0","id":8,"method":"m","params":"x"}`,
			code: invalid, id: transport.Int64ID(8), wantMsg: "params must be an object or an array",
		},
		{
			name: "params a number", in: `{"jsonrpc":"2.0","id":"p","method":"m","params":5}`,
			code: invalid, id: transport.StringID("p"), wantMsg: "params must be an object or an array",
		},
		{
			name: "params a bool on a notification", in: `{"jsonrpc":"2.0","method":"m","params":true}`,
			code: invalid, wantMsg: "params must be an object or an array",
		},
		{
			name: "both result and error", in: `{"jsonrpc":"2.0","id":10,"result":1,"error":{"code":1,"message":"x"}}`,
			code: invalid, id: transport.Int64ID(10), wantMsg: "a response must not carry both result and error",
		},
		{
			name: "neither method, result nor error", in: `{"jsonrpc":"2.0","id":11}`,
			code: invalid, id: transport.Int64ID(11), wantMsg: "message has neither method, result nor error",
		},
		{
			name: "null method", in: `{"jsonrpc":"2.0","id":12,"method":null}`,
			code: invalid, id: transport.Int64ID(12), wantMsg: `"method" must be a string`,
		},
		{
			name: "result response without id", in: `{"jsonrpc":"2.0","result":1}`,
			code: invalid, wantMsg: "a response must carry an id",
		},
		{
			name: "error response without id", in: `{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}`,
			code: invalid, wantMsg: "a response must carry an id",
		},
		{
			name: "error not an object", in: `{"jsonrpc":"2.0","id":13,"error":5}`,
			code: invalid, id: transport.Int64ID(13), wantMsg: "error must be an object",
		},
		{
			name: "error null", in: `{"jsonrpc":"2.0","id":13,"error":null}`,
			code: invalid, id: transport.Int64ID(13), wantMsg: "error must be an object",
		},
		{
			name: "error an array", in: `{"jsonrpc":"2.0","id":13,"error":[]}`,
			code: invalid, id: transport.Int64ID(13), wantMsg: "error must be an object",
		},
		{
			name: "error object empty", in: `{"jsonrpc":"2.0","id":14,"error":{}}`,
			code: invalid, id: transport.Int64ID(14), wantMsg: "error code must be an integer",
		},
		{
			name: "error code not a number", in: `{"jsonrpc":"2.0","id":14,"error":{"code":"x","message":"m"}}`,
			code: invalid, id: transport.Int64ID(14), wantMsg: "error code must be an integer",
		},
		{
			name: "error code a fraction", in: `{"jsonrpc":"2.0","id":14,"error":{"code":1.5,"message":"m"}}`,
			code: invalid, id: transport.Int64ID(14), wantMsg: "error code must be an integer",
		},
		{
			name: "error message missing", in: `{"jsonrpc":"2.0","id":"e","error":{"code":1}}`,
			code: invalid, id: transport.StringID("e"), wantMsg: "error message must be a string",
		},
		{
			name: "error message not a string", in: `{"jsonrpc":"2.0","id":"e","error":{"code":1,"message":1}}`,
			code: invalid, id: transport.StringID("e"), wantMsg: "error message must be a string",
		},
		{name: "vertical tab is not JSON white space", in: "\v{\"jsonrpc\":\"2.0\",\"method\":\"m\"}", code: parse},
		{name: "form feed is not JSON white space", in: "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\f", code: parse},
		{name: "no-break space is not JSON white space", in: "\u00a0{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}", code: parse},
		{name: "next line is not JSON white space", in: "[1]\u0085", code: parse},
		{name: "non-object before a form feed", in: "0 \f", code: parse},
		{name: "top-level null", in: `null`, code: invalid, wantMsg: "a message must be a JSON object"},
		{name: "top-level number", in: `5`, code: invalid, wantMsg: "a message must be a JSON object"},
		{name: "top-level string", in: `"x"`, code: invalid, wantMsg: "a message must be a JSON object"},
		{name: "top-level bool", in: `true`, code: invalid, wantMsg: "a message must be a JSON object"},
		{name: "top-level fraction with whitespace", in: " -1.5 ", code: invalid, wantMsg: "a message must be a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := transport.DecodeMessage([]byte(tc.in))
			require.Error(t, err)
			assert.Nil(t, got)
			de, ok := errors.AsType[*transport.DecodeError](err)
			require.True(t, ok, "error %v is %T, not a *DecodeError", err, err)
			assert.Equal(t, tc.code, de.Code)
			assert.Equal(t, tc.id, de.ID)
			require.Error(t, de.Err)
			require.ErrorIs(t, err, de.Err)
			assert.Equal(t, "transport: decode: "+de.Err.Error(), err.Error())
			if tc.wantMsg != "" {
				assert.Equal(t, tc.wantMsg, de.Err.Error())
			}
		})
	}
}

func TestDecodeErrorUnwrap(t *testing.T) {
	t.Parallel()
	cause := errors.New("cause")
	var err error = &transport.DecodeError{Code: protocol.CodeParseError, ID: transport.Int64ID(1), Err: cause}
	require.ErrorIs(t, err, cause)
	assert.Equal(t, "transport: decode: cause", err.Error())
}

func TestErrorAndRequestHelpers(t *testing.T) {
	t.Parallel()
	var err error = &transport.Error{Code: -32601, Message: "method not found"}
	assert.Equal(t, "jsonrpc error -32601: method not found", err.Error())
	assert.True(t, (&transport.Request{Method: "n"}).IsNotification())
	assert.False(t, (&transport.Request{ID: transport.StringID(""), Method: "r"}).IsNotification())
	assert.False(t, (&transport.Request{ID: transport.Int64ID(0), Method: "r"}).IsNotification())
}

func TestAppendMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  transport.Message
		want string
		// decoded is what DecodeMessage must return for want; nil means msg
		// itself (a lossless round trip).
		decoded transport.Message
	}{
		{
			name: "request",
			msg:  &transport.Request{ID: transport.Int64ID(1), Method: "tools/call", Params: raw(`{"name":"echo"}`)},
			want: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
		},
		{
			name: "request with string id and array params",
			msg:  &transport.Request{ID: transport.StringID("a-1"), Method: "sum", Params: raw(`[1,2]`)},
			want: `{"jsonrpc":"2.0","id":"a-1","method":"sum","params":[1,2]}`,
		},
		{
			name:    "request with empty non-nil params omits them",
			msg:     &transport.Request{ID: transport.Int64ID(-5), Method: "ping", Params: raw(``)},
			want:    `{"jsonrpc":"2.0","id":-5,"method":"ping"}`,
			decoded: &transport.Request{ID: transport.Int64ID(-5), Method: "ping"},
		},
		{
			name: "notification has no id",
			msg:  &transport.Request{Method: "notifications/initialized"},
			want: `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		},
		{
			name: "notification with params",
			msg:  &transport.Request{Method: "notifications/progress", Params: raw(`{"progress":0.5}`)},
			want: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":0.5}}`,
		},
		{
			name: "response with result",
			msg:  &transport.Response{ID: transport.Int64ID(7), Result: raw(`{"ok":true}`)},
			want: `{"jsonrpc":"2.0","id":7,"result":{"ok":true}}`,
		},
		{
			name: "response with null result",
			msg:  &transport.Response{ID: transport.StringID("n"), Result: raw(`null`)},
			want: `{"jsonrpc":"2.0","id":"n","result":null}`,
		},
		{
			name: "error response with data",
			msg: &transport.Response{
				ID:    transport.StringID("x"),
				Error: &transport.Error{Code: -32602, Message: "bad params", Data: raw(`{"field":"a"}`)},
			},
			want: `{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"bad params","data":{"field":"a"}}}`,
		},
		{
			name: "error response without data",
			msg:  &transport.Response{ID: transport.Int64ID(3), Error: &transport.Error{Code: 42, Message: ""}},
			want: `{"jsonrpc":"2.0","id":3,"error":{"code":42,"message":""}}`,
		},
		{
			name: "id-less error response has a null id",
			msg:  &transport.Response{Error: &transport.Error{Code: -32700, Message: "parse error"}},
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
		},
		{
			name: "quotes and backslashes are escaped",
			msg:  &transport.Request{ID: transport.StringID(`i"d\`), Method: `say "hi" \o/`},
			want: `{"jsonrpc":"2.0","id":"i\"d\\","method":"say \"hi\" \\o/"}`,
		},
		{
			name: "newline, carriage return and tab",
			msg:  &transport.Response{ID: transport.Int64ID(1), Error: &transport.Error{Code: 1, Message: "a\nb\r\nc\td"}},
			want: `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"a\nb\r\nc\td"}}`,
		},
		{
			name: "other control characters",
			msg:  &transport.Request{Method: "\x00\x01\x08\x0b\x0c\x1f\x7f"},
			want: `{"jsonrpc":"2.0","method":"\u0000\u0001\u0008\u000b\u000c\u001f` + "\x7f" + `"}`,
		},
		{
			name: "valid multi-byte UTF-8 is copied",
			msg:  &transport.Request{ID: transport.StringID("世界"), Method: "é🎉\u2028"},
			want: `{"jsonrpc":"2.0","id":"世界","method":"é🎉` + "\u2028" + `"}`,
		},
		{
			name:    "invalid UTF-8 becomes U+FFFD",
			msg:     &transport.Request{ID: transport.StringID("\xff"), Method: "a\xffb\xe2\x82c\xe2\x82\xac"},
			want:    `{"jsonrpc":"2.0","id":"\ufffd","method":"a\ufffdb\ufffd\ufffdc€"}`,
			decoded: &transport.Request{ID: transport.StringID("\uFFFD"), Method: "a\uFFFDb\uFFFD\uFFFDc€"},
		},
		{
			name:    "invalid UTF-8 in an error message",
			msg:     &transport.Response{ID: transport.Int64ID(2), Error: &transport.Error{Code: 1, Message: "\xc0\x80"}},
			want:    `{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"\ufffd\ufffd"}}`,
			decoded: &transport.Response{ID: transport.Int64ID(2), Error: &transport.Error{Code: 1, Message: "\uFFFD\uFFFD"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := transport.AppendMessage(nil, tc.msg)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
			require.True(t, json.Valid(got), "output is not valid JSON: %s", got)

			back, err := transport.DecodeMessage(got)
			require.NoError(t, err)
			want := tc.decoded
			if want == nil {
				want = tc.msg
			}
			assert.Equal(t, want, back)

			// Appending keeps what the buffer already holds.
			prefixed, err := transport.AppendMessage([]byte("prefix:"), tc.msg)
			require.NoError(t, err)
			assert.Equal(t, "prefix:"+tc.want, string(prefixed))
		})
	}
}

func TestAppendMessageResponseBatch(t *testing.T) {
	t.Parallel()
	batch := transport.ResponseBatch{
		{ID: transport.Int64ID(1), Result: raw(`{}`)},
		{ID: transport.StringID("b"), Error: &transport.Error{Code: -32601, Message: "no \"such\" method"}},
		{Error: &transport.Error{Code: -32600, Message: "invalid", Data: raw(`[1]`)}},
	}
	got, err := transport.AppendMessage(nil, batch)
	require.NoError(t, err)
	want := `[{"jsonrpc":"2.0","id":1,"result":{}},` +
		`{"jsonrpc":"2.0","id":"b","error":{"code":-32601,"message":"no \"such\" method"}},` +
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid","data":[1]}}]`
	require.Equal(t, want, string(got), "byte-exact golden output")
	require.True(t, json.Valid(got))

	decoded, err := transport.DecodeMessage(got)
	require.NoError(t, err)
	elems, ok := decoded.(transport.Batch)
	require.True(t, ok, "got %T", decoded)
	require.Len(t, elems, len(batch))
	for i, e := range elems {
		m, err := transport.DecodeMessage(e)
		require.NoError(t, err)
		assert.Equal(t, batch[i], m, "element %d", i)
	}
}

func TestAppendMessageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		msg     transport.Message
		wantErr string
	}{
		{name: "empty response batch", msg: transport.ResponseBatch{}, wantErr: "transport: empty response batch"},
		{name: "nil response batch", msg: transport.ResponseBatch(nil), wantErr: "transport: empty response batch"},
		{
			name:    "response with neither result nor error",
			msg:     &transport.Response{ID: transport.Int64ID(1)},
			wantErr: "transport: response has neither result nor error",
		},
		{
			name:    "response with empty result",
			msg:     &transport.Response{ID: transport.Int64ID(1), Result: raw(``)},
			wantErr: "transport: response has neither result nor error",
		},
		{
			name:    "batch element with neither result nor error",
			msg:     transport.ResponseBatch{{ID: transport.Int64ID(1), Result: raw(`1`)}, {ID: transport.Int64ID(2)}},
			wantErr: "transport: response has neither result nor error",
		},
		{
			name:    "result response without id",
			msg:     &transport.Response{Result: raw(`1`)},
			wantErr: "transport: a result response needs an id",
		},
		{
			name:    "batch element with result but no id",
			msg:     transport.ResponseBatch{{ID: transport.Int64ID(1), Result: raw(`1`)}, {Result: raw(`2`)}},
			wantErr: "transport: a result response needs an id",
		},
		{name: "read-side batch", msg: transport.Batch{raw(`{}`)}, wantErr: "transport: cannot encode transport.Batch"},
		{name: "nil message", msg: nil, wantErr: "transport: cannot encode <nil>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := transport.AppendMessage([]byte("keep"), tc.msg)
			require.EqualError(t, err, tc.wantErr)
		})
	}
}
