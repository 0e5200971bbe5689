package streamable

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
)

// TestOneLine: an SSE event's data never holds CR or LF: JSON white space
// is compacted away, only it changing (a CR or LF in a string is always
// escaped in valid JSON); data that is not JSON has each replaced by a
// space; data on one line already is written as it is.
func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"x y","b":[1, 2]}`:                        `{"a":"x y","b":[1, 2]}`,
		"{\"content\":\r\r[{\"text\":\"a\\r\\nb\"}]\r}": `{"content":[{"text":"a\r\nb"}]}`,
		"{\n  \"a\": 1\r\n}":                            `{"a":1}`,
		"not json\r\nat all\n":                          "not json  at all ",
	} {
		assert.Equal(t, want, string(oneLine([]byte(in))), "%q", in)
	}
	b, err := appendEventMessage(appendEventHead(nil, "7"), &transport.Response{ID: transport.Int64ID(1), Result: []byte("{\"k\":\r\n1}")})
	require.NoError(t, err)
	assert.Equal(t, "id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"k\":1}}", string(b))
}
