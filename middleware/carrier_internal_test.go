package middleware

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
)

// The propagation carriers read and list what a request's _meta or a
// client call's Meta holds; the _meta of a request is read-only.
func TestCarriers(t *testing.T) {
	t.Parallel()
	var m server.RequestMeta
	require.NoError(t, json.Unmarshal([]byte(`{"traceparent":"00-abc-def-01","n":1}`), &m))
	meta := metaCarrier{&m}
	assert.Equal(t, "00-abc-def-01", meta.Get("traceparent"))
	assert.Empty(t, meta.Get("n"), "not a string")
	assert.Empty(t, meta.Get("missing"))
	meta.Set("traceparent", "changed")
	assert.Equal(t, "00-abc-def-01", meta.Get("traceparent"), "Set does nothing")
	keys := meta.Keys()
	slices.Sort(keys)
	assert.Equal(t, []string{"n", "traceparent"}, keys)

	call := callCarrier{c: &server.ClientCall{}}
	assert.Empty(t, call.Get("traceparent"))
	assert.Empty(t, call.Keys())
	call.Set("traceparent", "00-1-2-01")
	call.Set("tracestate", "a=b")
	assert.Equal(t, "00-1-2-01", call.Get("traceparent"))
	keys = call.Keys()
	slices.Sort(keys)
	assert.Equal(t, []string{"traceparent", "tracestate"}, keys)
	call.c.Meta["x"] = 5
	assert.Empty(t, call.Get("x"), "not a string")
}
