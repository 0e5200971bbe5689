package server

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEncodedCapabilitiesFollowRegistrations: the initialize result's
// capabilities, encoded once and kept, are those of what is registered
// now: a tool, a prompt or a resource added after an initialize shows in
// the next one, and an unchanged server answers with the same bytes.
func TestEncodedCapabilitiesFollowRegistrations(t *testing.T) {
	s := New()
	same := func() {
		t.Helper()
		want, err := json.Marshal(s.capabilities())
		require.NoError(t, err)
		got := s.encodedCapabilities()
		assert.JSONEq(t, string(want), string(got))
		assert.Same(t, &got[0], &s.encodedCapabilities()[0], "encoded again although nothing changed")
	}
	same()
	assert.NotContains(t, string(s.encodedCapabilities()), `"tools"`)
	noop := func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil }
	require.NoError(t, s.AddTool(Tool{Name: "t"}, noop))
	same()
	assert.Contains(t, string(s.encodedCapabilities()), `"tools":{"listChanged":true}`)
	require.NoError(t, s.AddPrompt(Prompt{Name: "p"}, func(context.Context, *GetPromptRequest) (*GetPromptResult, error) { return nil, nil }))
	same()
	assert.Contains(t, string(s.encodedCapabilities()), `"prompts":{"listChanged":true}`)
	s.RemoveTools("t")
	same()
	assert.NotContains(t, string(s.encodedCapabilities()), `"tools"`)
}
