package transport_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
)

// EncodedSize is exactly the length of AppendMessage's output.
func TestEncodedSizeMatchesAppendMessage(t *testing.T) {
	t.Parallel()
	odd := "q\"\\\n\r\t\x01\x7f é 🙂 \xff\u2028"
	msgs := []transport.Message{
		&transport.Request{ID: transport.Int64ID(-42), Method: "tools/call", Params: json.RawMessage(`{"a":1}`)},
		&transport.Request{ID: transport.StringID(odd), Method: odd},
		&transport.Request{Method: "notifications/initialized"},
		&transport.Response{ID: transport.Int64ID(7), Result: json.RawMessage(`{"content":[]}`)},
		&transport.Response{ID: transport.StringID("x"), Error: &transport.Error{Code: -32602, Message: odd, Data: json.RawMessage(`{"uri":"u"}`)}},
		&transport.Response{Error: &transport.Error{Code: -32700, Message: "parse error"}},
		transport.ResponseBatch{
			&transport.Response{ID: transport.Int64ID(1), Result: json.RawMessage(`{}`)},
			&transport.Response{ID: transport.Int64ID(2), Error: &transport.Error{Code: 1, Message: "m"}},
		},
	}
	for _, n := range []int64{0, 9, 10, 99, 100, -1, -9, -10, 1234567890, math.MaxInt64, math.MinInt64} {
		msgs = append(msgs,
			&transport.Response{ID: transport.Int64ID(n), Result: json.RawMessage(`{}`)},
			&transport.Response{ID: transport.Int64ID(1), Error: &transport.Error{Code: n, Message: "m"}})
	}
	for _, m := range msgs {
		enc, err := transport.AppendMessage(nil, m)
		require.NoError(t, err)
		assert.Equal(t, len(enc), transport.EncodedSize(m), "%s", enc)
	}
	// What AppendMessage refuses measures 0.
	assert.Zero(t, transport.EncodedSize(&transport.Response{ID: transport.Int64ID(1)}))
	assert.Zero(t, transport.EncodedSize(transport.ResponseBatch{}))
	assert.Zero(t, transport.EncodedSize((*transport.Request)(nil)))
}

// EncodedSize counts, not formats: no allocation, even for a large id or
// error code (strconv allocates for those).
func TestEncodedSizeAllocatesNothing(t *testing.T) {
	big := &transport.Response{ID: transport.Int64ID(math.MaxInt64), Error: &transport.Error{Code: -32602, Message: "m"}}
	req := &transport.Request{ID: transport.Int64ID(123456), Method: "tools/call", Params: json.RawMessage(`{}`)}
	assert.Zero(t, testing.AllocsPerRun(10, func() { _ = transport.EncodedSize(big) + transport.EncodedSize(req) }))
}

// FuzzEncodedSize checks the count against the encoder for any decodable
// message.
func FuzzEncodedSize(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":"\u00e9\n","method":"m\u0001","params":[1]}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"\ud83d\ude42"}}`))
	f.Fuzz(func(t *testing.T, frame []byte) {
		m, err := transport.DecodeMessage(frame)
		if err != nil {
			return
		}
		if _, ok := m.(transport.Batch); ok {
			return
		}
		enc, err := transport.AppendMessage(nil, m)
		if err != nil {
			return
		}
		if got := transport.EncodedSize(m); got != len(enc) {
			t.Fatalf("EncodedSize %d, encoding %d: %s", got, len(enc), enc)
		}
	})
}
