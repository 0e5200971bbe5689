package transport

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
)

// Members finds each member as jsonscan.SplitObjectInto does (escaped names decoded,
// the last of a repeated member), says whether there are others, and
// splits Params once.
func TestRequestMembers(t *testing.T) {
	keys := []string{"name", "uri", "taskId", "_meta", "arguments", "task"}
	for _, c := range []struct {
		params string
		ok     bool
		others bool
	}{
		{`{"name":"echo","arguments":{"text":"hi"},"_meta":{"k":"v"}}`, true, false},
		{`{"uri":"file:///a","_meta":null}`, true, false},
		{`{"taskId":"t1","task":{"ttl":1}}`, true, false},
		{`{"name":"a","name":"b"}`, true, false},
		{`{"na\u006de":"escaped","arguments":{"name":"nested"}}`, true, false},
		{`{"name":"echo","inputResponses":{}}`, true, true},
		{`{ "Name" : 1 }`, true, true}, // as decoded: no space around params
		{`{}`, true, false},
		{`[1,2]`, false, false},
		{`null`, false, false},
		{``, false, false},
	} {
		req := &Request{Method: "tools/call", Params: []byte(c.params)}
		m, ok := req.Members()
		assert.Equal(t, c.ok, ok, c.params)
		assert.Equal(t, c.others, m.Others, c.params)
		want := make([][]byte, len(keys))
		if c.ok {
			assert.True(t, jsonscan.SplitObjectInto(want, []byte(c.params), keys...), c.params)
		}
		got := [][]byte{m.Name, m.URI, m.TaskID, m.Meta, m.Arguments, m.Task}
		assert.Equal(t, want, got, c.params)

		// Kept: a second call returns what the first found, even once
		// Params no longer says so.
		req.Params = []byte(`{"name":"other"}`)
		again, okAgain := req.Members()
		assert.Equal(t, ok, okAgain, c.params)
		assert.Equal(t, m, again, c.params)
	}
}
