package transport_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
)

// FuzzDecodeMessage checks that DecodeMessage never panics, classifies every
// failure, and that whatever it accepts as a request or response survives an
// AppendMessage / DecodeMessage round trip unchanged.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`,
		`{"jsonrpc":"2.0","id":"abc","result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error","data":"x"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`,
		`{"jsonrpc":"2.0","id":-9223372036854775808,"method":"m","params":null}`,
		`{"jsonrpc":"2.0","id":"\u00e9\ud800\n","method":"\"\\\u0000"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
		`{"jsonrpc":"1.0","id":5,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1.5,"result":1}`,
		`[]`,
		`5`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"t","_meta":{"a":1,"\u0062":[{}],"a":"x"},"arguments":{"_meta":{}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"a":1,"b":2,"c":3,"d":4,"e":5}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"a":1}},"params":{"_meta":7}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"a":1},"_meta":{"b":2}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"a":1}},"params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"a":1}},"p\u0061rams":{"x":{"_meta":{"b":2}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkOwnedSplit(t, data)
		msg, err := transport.DecodeMessage(data)
		if err != nil {
			require.Nil(t, msg)
			de, ok := errors.AsType[*transport.DecodeError](err)
			require.True(t, ok, "error %v is %T, not a *DecodeError", err, err)
			require.Error(t, de.Err)
			// Parse error exactly when the frame is not UTF-8 JSON.
			wantCode := protocol.CodeInvalidRequest
			if !utf8.Valid(data) || !json.Valid(data) {
				wantCode = protocol.CodeParseError
			}
			require.Equal(t, wantCode, de.Code, "error: %v", err)
			if de.Code == protocol.CodeParseError && de.ID.IsValid() {
				// Only a response whose one fault is bytes that are not
				// UTF-8 keeps its id, so that its receiver fails the call
				// it answers at once (DecodeError): the same frame with
				// those bytes replaced is that response.
				m, err := transport.DecodeMessage(bytes.ToValidUTF8(data, []byte("\uFFFD")))
				require.NoError(t, err, "a parse error knows an id only for a response that is one but for its encoding")
				r, ok := m.(*transport.Response)
				require.True(t, ok, "a parse error knows an id only for a response: %T", m)
				require.Equal(t, r.ID, de.ID)
			}
			return
		}
		require.NotNil(t, msg)
		switch m := msg.(type) {
		case transport.Batch:
			require.NotEmpty(t, m)
			for _, e := range m {
				require.True(t, json.Valid(e), "batch element %q", e)
			}
			return
		case *transport.Request:
			require.NotEmpty(t, m.Method)
			if m.Params != nil {
				require.Contains(t, "{[", string(m.Params[:1]))
			}
		case *transport.Response:
			require.NotEqual(t, m.Result != nil, m.Error != nil, "exactly one of result and error")
		default:
			t.Fatalf("DecodeMessage returned %T", msg)
		}

		enc, err := transport.AppendMessage(nil, msg)
		require.NoError(t, err)
		require.True(t, json.Valid(enc), "encoded %q", enc)
		back, err := transport.DecodeMessage(enc)
		require.NoError(t, err, "input %q encoded as %q", data, enc)
		assert.Equal(t, normalize(t, msg), normalize(t, back), "input %q encoded as %q", data, enc)
	})
}

// checkOwnedSplit checks the members of params and of its _meta that
// DecodeOwnedMessage takes as it checks the frame: a request it decodes
// reads them as a Request of the same params that splits them afresh.
func checkOwnedSplit(t *testing.T, data []byte) {
	t.Helper()
	msg, err := transport.DecodeOwnedMessage(bytes.Clone(data))
	req, ok := msg.(*transport.Request)
	if err != nil || !ok {
		return
	}
	fresh := &transport.Request{Method: req.Method, Params: req.Params}
	got, gotOK := req.Members()
	want, wantOK := fresh.Members()
	require.Equal(t, wantOK, gotOK, "params of %q", data)
	require.Equal(t, want, got, "params of %q", data)
	var gotMeta, wantMeta [][2]string
	gotOK = req.EachMeta(func(k, v []byte) { gotMeta = append(gotMeta, [2]string{string(k), string(v)}) })
	wantOK = fresh.EachMeta(func(k, v []byte) { wantMeta = append(wantMeta, [2]string{string(k), string(v)}) })
	require.Equal(t, wantOK, gotOK, "_meta of %q", data)
	require.Equal(t, wantMeta, gotMeta, "_meta of %q", data)
}

// normalized is a message with its raw JSON fields compacted.
type normalized struct {
	Kind    string
	ID      transport.ID
	Method  string
	Params  string
	Result  string
	IsError bool
	Code    int64
	Message string
	Data    string
}

func normalize(t *testing.T, m transport.Message) normalized {
	t.Helper()
	switch m := m.(type) {
	case *transport.Request:
		return normalized{Kind: "request", ID: m.ID, Method: m.Method, Params: compact(t, m.Params)}
	case *transport.Response:
		n := normalized{Kind: "response", ID: m.ID, Result: compact(t, m.Result)}
		if m.Error != nil {
			n.IsError = true
			n.Code, n.Message, n.Data = m.Error.Code, m.Error.Message, compact(t, m.Error.Data)
		}
		return n
	default:
		t.Fatalf("cannot normalize %T", m)
		return normalized{}
	}
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if raw == nil {
		return "<absent>"
	}
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, raw))
	return b.String()
}
