package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/memory"
)

// A session record in the shared store (written by an older replica, or
// tampered with) is bounded as it is applied, as initialize bounds it.
func TestApplySharedBounds(t *testing.T) {
	srv := New()
	require.NoError(t, srv.AddResourceTemplate(ResourceTemplate{URITemplate: "test://{x}", Name: "x"},
		func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) { return nil, nil }))
	_, conn := memory.NewPair()
	ss := newSession(context.Background(), srv, conn)
	t.Cleanup(func() { srv.unsubscribeAll(ss) })
	experimental := map[string]any{}
	for i := range 100 {
		experimental[fmt.Sprintf("k%03d", i)] = strings.Repeat("v", 1<<10)
	}
	subs := make([]string, 0, 3000)
	for i := range 3000 {
		subs = append(subs, fmt.Sprintf("test://%05d%s", i, strings.Repeat("u", i%3*1500)))
	}
	long := strings.Repeat("ü", 1<<15)
	state, err := json.Marshal(sharedState{
		Version: "2025-11-25", Ready: true,
		Client:        Implementation{Name: long, Title: long, Version: long},
		Caps:          ClientCapabilities{Experimental: experimental, Extensions: map[string]any{ExtensionTasks: map[string]any{}}},
		Subscriptions: subs,
	})
	require.NoError(t, err)
	ss.applyShared(state)

	info := ss.ClientInfo()
	for _, s := range []string{info.Name, info.Title, info.Version} {
		assert.LessOrEqual(t, len(s), maxClientInfoString)
		assert.True(t, utf8.ValidString(s))
	}
	caps := ss.ClientCapabilities()
	assert.Len(t, caps.Experimental, maxCapabilityKeys)
	assert.Contains(t, caps.Extensions, ExtensionTasks)
	kept := ss.Subscriptions()
	assert.NotEmpty(t, kept)
	assert.LessOrEqual(t, len(kept), maxSubscriptions)
	total := 0
	for _, u := range kept {
		assert.LessOrEqual(t, len(u), maxURI)
		total += len(u)
	}
	assert.LessOrEqual(t, total, maxSubscriptionBytes)
}

// boundedCapabilities keeps a map within its bounds as it is (the same
// map), and cuts one over them to its first keys, each value kept when it
// fits, else {}; null values stay null.
func TestBoundedCapabilities(t *testing.T) {
	small := map[string]any{"a": map[string]any{"x": []any{1.0, "s", true, nil}}, "b": nil}
	assert.Equal(t, small, boundedCapabilities(small))
	assert.Nil(t, boundedCapabilities(nil))

	deep := any("leaf")
	for range 1000 {
		deep = []any{deep}
	}
	m := map[string]any{
		"deep":                   deep,
		"big":                    strings.Repeat("x", 300),
		"null":                   nil,
		"ok":                     map[string]any{"level": 2.0},
		strings.Repeat("k", 129): true,
	}
	got := boundedCapabilities(m)
	assert.Equal(t, map[string]any{"deep": map[string]any{}, "big": map[string]any{}, "null": nil, "ok": map[string]any{"level": 2.0}}, got)
	for _, v := range got {
		assert.GreaterOrEqual(t, jsonSizeWithin(v, maxCapabilityValue), 0)
	}
	assert.Negative(t, jsonSizeWithin(map[string]any{"a": strings.Repeat("x", 250)}, maxCapabilityValue), "the key and quotes count")
	assert.Negative(t, jsonSizeWithin(struct{}{}, maxCapabilityValue), "a type decoding never makes is not kept")
}

// truncateUTF8 cuts on a rune boundary, never over n.
func TestTruncateUTF8(t *testing.T) {
	assert.Equal(t, "abc", truncateUTF8("abc", 3))
	assert.Equal(t, "ab", truncateUTF8("abc", 2))
	assert.Equal(t, "a", truncateUTF8("aé", 2), "é is two bytes")
	assert.Empty(t, truncateUTF8("€", 2))
	assert.Equal(t, "€", truncateUTF8("€€", 5))
}
