package middleware_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/middleware"
)

// Content capture is off by default: neither the arguments nor the result
// of a tool call, nor a prompt's arguments, reach the span.
func TestContentCaptureOffByDefault(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newTraced(t, nil).start(t.Context(), nil)
		h.Initialize("", nil)
		h.SendCallTool(2, "echo", map[string]any{"city": "Paris"})
		h.RecvResponseTo(2)
		h.Request(3, "prompts/get", map[string]any{"name": "greet", "arguments": map[string]string{"city": "Paris"}})
		h.RecvResponseTo(3)
		h.close()
		for _, name := range []string{"tools/call echo", "prompts/get greet"} {
			for k := range spanAttrs(h.span(name)) {
				assert.NotContains(t, k, "gen_ai.tool.call.", name)
				assert.NotContains(t, k, "gen_ai.prompt.variable.", name)
			}
		}
	})
}

// With WithContentCapture(nil), the default redactor records the content
// with secrets masked and the rest as sent.
func TestContentCaptureRedacted(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newTracedWith(t, nil, []middleware.InstrumentationOption{middleware.WithContentCapture(nil)}, nil).start(t.Context(), nil)
		h.Initialize("", nil)
		h.SendCallTool(2, "echo", map[string]any{
			"city":     "Paris",
			"Password": "hunter2",
			"nested":   map[string]any{"X-Api-Key": "k", "header": "Bearer abc.def", "n": 3},
		})
		h.RecvResponseTo(2)
		vars := map[string]string{"city": "Paris", "github_token": "whatever", "note": "ghp_0123456789abcdefABCDEF"}
		for i := range 40 {
			vars[fmt.Sprintf("v%02d", i)] = "x"
		}
		h.Request(3, "prompts/get", map[string]any{"name": "greet", "arguments": vars})
		h.RecvResponseTo(3)
		h.close()

		call := spanAttrs(h.span("tools/call echo"))
		assert.JSONEq(t, `{"city":"Paris","Password":"[REDACTED]","nested":{"X-Api-Key":"[REDACTED]","header":"[REDACTED]","n":3}}`,
			call["gen_ai.tool.call.arguments"])
		assert.JSONEq(t, `{"content":[{"type":"text","text":"hi"}]}`, call["gen_ai.tool.call.result"])

		prompt := spanAttrs(h.span("prompts/get greet"))
		assert.Equal(t, `"Paris"`, prompt["gen_ai.prompt.variable.city"])
		assert.Equal(t, `[REDACTED]`, prompt["gen_ai.prompt.variable.github_token"], "a secret by its name")
		assert.Equal(t, `"[REDACTED]"`, prompt["gen_ai.prompt.variable.note"], "a secret by its look")
		n := 0
		for k := range prompt {
			if strings.HasPrefix(k, "gen_ai.prompt.variable.") {
				n++
			}
		}
		assert.Equal(t, 32, n, "prompt variables are bounded in count")
	})
}

// The default redactor masks by key and by look, keeps the rest, and caps
// what it returns.
func TestDefaultRedactor(t *testing.T) {
	t.Parallel()
	r := middleware.DefaultRedactor(256)
	for _, tt := range []struct{ key, in, want string }{
		{
			"", `{"user":"ann","PASSWORD":"x","client_secret":"y","Authorization":"z","access_token":1}`,
			`{"Authorization":"[REDACTED]","PASSWORD":"[REDACTED]","access_token":"[REDACTED]","client_secret":"[REDACTED]","user":"ann"}`,
		},
		{
			"", `["bearer abc","Basic Zm9v","sk-abcdefghijklmnop","AKIAABCDEFGHIJKLMNOP","plain words"]`,
			`["[REDACTED]","[REDACTED]","[REDACTED]","[REDACTED]","plain words"]`,
		},
		{"", `"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"`, `"[REDACTED]"`},
		{"", `"aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3f"`, `"[REDACTED]"`},
		{"", `"123e4567-e89b-12d3-a456-426614174000"`, `"123e4567-e89b-12d3-a456-426614174000"`}, // a UUID is no key
		{"api_key", `"anything"`, `[REDACTED]`},
		{"", `not json`, `"not json"`},
	} {
		assert.Equal(t, tt.want, r(tt.key, []byte(tt.in)), tt.in)
	}
	// Cut at the cap, on a rune boundary.
	assert.Equal(t, `"`+strings.Repeat("é", 31)+"…", middleware.DefaultRedactor(64)("", []byte(`"`+strings.Repeat("é", 100)+`"`)))
	require.NotNil(t, middleware.DefaultRedactor(0))
	assert.Len(t, middleware.DefaultRedactor(0)("", []byte(`"`+strings.Repeat("a", 10000)+`"`)), 4096+len("…"))
}

// A Redactor that panics costs the span its content, not the server.
func TestContentCaptureRedactorPanics(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		boom := func(string, []byte) string { panic("redactor bug") }
		h := newTracedWith(t, nil, []middleware.InstrumentationOption{middleware.WithContentCapture(boom)}, nil).start(t.Context(), nil)
		h.Initialize("", nil)
		h.SendCallTool(2, "echo", map[string]any{"city": "Paris"})
		require.Nil(t, h.RecvResponseTo(2).Error)
		h.close()
		s := h.span("tools/call echo")
		assert.NotContains(t, spanAttrs(s), "gen_ai.tool.call.arguments")
		assert.Equal(t, []string{"content_capture_failed"}, spanEvents(s))
	})
}
