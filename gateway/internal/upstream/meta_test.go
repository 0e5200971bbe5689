package upstream

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithMeta(t *testing.T) {
	t.Parallel()
	const add = `"traceparent":"00-a-b-01","progressToken":7`
	for _, tc := range []struct{ name, params, want string }{
		{"none", ``, `{"_meta":{"traceparent":"00-a-b-01","progressToken":7}}`},
		{"null", `null`, `{"_meta":{"traceparent":"00-a-b-01","progressToken":7}}`},
		{"empty", ` { } `, `{"_meta":{"traceparent":"00-a-b-01","progressToken":7}}`},
		{"spliced", `{"name":"x","arguments":{"a":[1,{"b":2}]}}`, `{"name":"x","arguments":{"a":[1,{"b":2}]},"_meta":{"traceparent":"00-a-b-01","progressToken":7}}`},
		{"merged", `{"name":"x","_meta":{"progressToken":1,"k":"v"}}`, `{"name":"x","_meta":{"traceparent":"00-a-b-01","progressToken":7,"k":"v"}}`},
		{"nested _meta left alone", `{"arguments":{"_meta":{"x":1}}}`, `{"arguments":{"_meta":{"x":1}},"_meta":{"traceparent":"00-a-b-01","progressToken":7}}`},
		{"null _meta", `{"_meta":null}`, `{"_meta":{"traceparent":"00-a-b-01","progressToken":7}}`},
	} {
		got, err := withMeta(json.RawMessage(tc.params), []byte(add))
		require.NoError(t, err, tc.name)
		assert.JSONEq(t, tc.want, string(got), tc.name)
	}
	same, err := withMeta(json.RawMessage(`{"a":1}`), nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":1}`, string(same), "nothing to add")
	for _, bad := range []string{`[1]`, `"s"`, `{"_meta":[1]}`, `{"_meta":{}`} {
		_, err := withMeta(json.RawMessage(bad), []byte(add))
		require.Error(t, err, bad)
	}
	assert.Equal(t, `"progressToken":3`, string(progressMember(nil, "3")))
	assert.Equal(t, `"a":1,"progressToken":3`, string(progressMember([]byte(`"a":1`), "3")))
}

// TestWithoutEraMembers: the 2026-07-28 era's result members and the
// reserved keys of _meta go, however their names are escaped; the rest
// stays byte for byte; a _meta left empty goes; what is not valid JSON is
// returned as it is.
func TestWithoutEraMembers(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{
			`{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"u"}}}`,
			`{"content":[{"type":"text","text":"hi"}]}`,
		},
		{
			`{"_meta":{"k":1,"io.modelcontextprotocol/serverInfo":{"name":"u"}},"resultType":"complete","isError":true}`,
			`{"_meta":{"k":1},"isError":true}`,
		},
		{`{"content":[]}`, `{"content":[]}`},
		{`{"resultType":"complete","we\"ird":1}`, `{"we\"ird":1}`},
		{ // the 2026-07-28 round's members and every reserved key, however escaped
			`{"content":[],"result\u0054ype":"input_required","inputRequests":{"a":{}},"requestState":"s","ttlMs":9,"cacheScope":"public",` +
				`"_meta":{"io.modelcontextprotocol\/serverInfo":{"name":"forged"},"io.modelcontextprotocol/related-task":{},"mine":1}}`,
			`{"content":[],"_meta":{"mine":1}}`,
		},
		{`{"_meta":{"io.modelcontextprotocol/logLevel":"debug"}}`, `{}`},
		{`{"resultType":`, `{"resultType":`},
	} {
		assert.Equal(t, c.want, string(WithoutEraMembers(json.RawMessage(c.in))), c.in)
	}
}
