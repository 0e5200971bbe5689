package server

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A RequestMeta keeps each name once, with its last value, in the order
// the names first came, past the members it holds in place too; without
// leaves the names it drops out of a copy that shares nothing.
func TestRequestMeta(t *testing.T) {
	var m RequestMeta
	assert.Zero(t, m.Len())
	for i := range 6 {
		m.set(fmt.Sprintf("k%d", i), json.RawMessage(fmt.Sprint(i)))
	}
	m.set("k1", json.RawMessage(`"again"`))
	m.set("k5", json.RawMessage(`"last"`))
	require.Equal(t, 6, m.Len())
	var names []string
	var values []string
	for name, raw := range m.All() {
		names = append(names, name)
		values = append(values, string(raw))
	}
	assert.Equal(t, []string{"k0", "k1", "k2", "k3", "k4", "k5"}, names)
	assert.Equal(t, []string{"0", `"again"`, "2", "3", "4", `"last"`}, values)
	for name := range m.All() {
		if name == "k2" {
			break // All stops when asked
		}
	}

	c := m.without("k1", "k5", "absent")
	assert.Equal(t, 4, c.Len())
	_, ok := c.Get("k1")
	assert.False(t, ok)
	c.set("k0", json.RawMessage(`"changed"`))
	c.set("k6", json.RawMessage(`6`))
	c.set("k7", json.RawMessage(`7`))
	raw, ok := m.Get("k0")
	require.True(t, ok)
	assert.Equal(t, "0", string(raw), "the copy shares nothing")
	_, ok = m.Get("k6")
	assert.False(t, ok)
	raw, ok = m.Get("k5")
	require.True(t, ok)
	assert.Equal(t, `"last"`, string(raw))

	var parsed RequestMeta
	require.NoError(t, parsed.UnmarshalJSON([]byte(`{"a":1,"b":{"c":2},"a":3}`)))
	assert.Equal(t, 2, parsed.Len())
	raw, _ = parsed.Get("a")
	assert.Equal(t, "3", string(raw))
	for _, bad := range []string{`[1]`, `"s"`, `{"a":`, ``} {
		var m RequestMeta
		assert.Error(t, m.UnmarshalJSON([]byte(bad)), "%q", bad)
	}
}
