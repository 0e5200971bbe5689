package server_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
)

// TestPromptArgumentRoundTrip: a prompt argument decoded and encoded
// again says what it said: "required": false kept, and absent when it was.
func TestPromptArgumentRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{"name":"a","required":false}`,
		`{"name":"a","required":true}`,
		`{"name":"a","title":"A","description":"the a"}`,
	} {
		var a server.PromptArgument
		require.NoError(t, json.Unmarshal([]byte(in), &a))
		out, err := json.Marshal(a)
		require.NoError(t, err)
		assert.JSONEq(t, in, string(out))
	}
	out, err := json.Marshal(server.PromptArgument{Name: "b"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"b"}`, string(out), "a Go value that is not required says nothing")
}
