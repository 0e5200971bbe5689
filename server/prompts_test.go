package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

func userText(s string) *server.PromptMessage {
	return &server.PromptMessage{Role: "user", Content: &server.TextContent{Text: s}}
}

// addPrompts registers the prompts the tests get.
func addPrompts(t testing.TB, srv *server.Server) {
	require.NoError(t, srv.AddPrompt(server.Prompt{Name: "simple", Description: "A simple prompt."},
		func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
			return &server.GetPromptResult{Messages: []*server.PromptMessage{userText("hi")}}, nil
		}))
	require.NoError(t, srv.AddPrompt(server.Prompt{
		Name: "with-args", Title: "With Args", Description: "Takes arguments.",
		Icons: []server.Icon{{Src: "https://example.com/p.svg"}}, Meta: server.Meta{"k": true},
		Arguments: []server.PromptArgument{
			{Name: "arg1", Title: "First", Description: "Required.", Required: true},
			{Name: "arg2", Complete: func(context.Context, *server.CompleteRequest) ([]string, error) { return []string{"x"}, nil }},
		},
	}, func(_ context.Context, req *server.GetPromptRequest) (*server.GetPromptResult, error) {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(req.Arguments)) {
			parts = append(parts, k+"="+req.Arguments[k])
		}
		return &server.GetPromptResult{
			Description: "args of " + req.Name,
			Messages:    []*server.PromptMessage{userText(strings.Join(parts, ","))},
		}, nil
	}))
	size := int64(4)
	prio := 1.0
	require.NoError(t, srv.AddPrompt(server.Prompt{Name: "all-content"},
		func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
			return &server.GetPromptResult{Meta: server.Meta{"m": "v"}, Messages: []*server.PromptMessage{
				{Role: "user", Content: &server.TextContent{Text: "t", Annotations: &server.Annotations{Audience: []string{"assistant"}, Priority: &prio}, Meta: server.Meta{"x": 1}}},
				{Role: "assistant", Content: &server.ImageContent{Data: []byte("png"), MIMEType: "image/png"}},
				{Role: "user", Content: &server.AudioContent{Data: []byte("wav"), MIMEType: "audio/wav"}},
				{Role: "user", Content: &server.ResourceLink{server.Resource{URI: "test://r", Name: "r", Title: "R", Description: "d", MIMEType: "text/plain", Size: &size, Icons: []server.Icon{{Src: "https://example.com/r.png", Sizes: []string{"48x48"}, Theme: "dark"}}}}},
				{Role: "user", Content: &server.EmbeddedResource{Resource: &server.ResourceContents{URI: "test://e", MIMEType: "text/plain", Text: "embedded"}}},
				{Role: "assistant", Content: &server.EmbeddedResource{Resource: &server.ResourceContents{URI: "test://b", MIMEType: "application/octet-stream", Blob: []byte{0xff, 0}}, Annotations: &server.Annotations{LastModified: "2025-01-01T00:00:00Z"}}},
			}}, nil
		}))
	require.NoError(t, srv.AddPrompt(server.Prompt{Name: "errors", Arguments: []server.PromptArgument{{Name: "kind", Required: true}}},
		func(_ context.Context, req *server.GetPromptRequest) (*server.GetPromptResult, error) {
			switch req.Arguments["kind"] {
			case "protocol":
				return nil, server.Errorf(protocol.CodeInvalidParams, "kind is not allowed")
			case "internal":
				return nil, errors.New("secret detail")
			case "bad-role":
				return &server.GetPromptResult{Messages: []*server.PromptMessage{{Role: "system", Content: &server.TextContent{Text: "x"}}}}, nil
			case "nil-content":
				return &server.GetPromptResult{Messages: []*server.PromptMessage{{Role: "user"}}}, nil
			case "nil-message":
				return &server.GetPromptResult{Messages: []*server.PromptMessage{userText("ok"), nil}}, nil
			case "bad-embedded":
				return &server.GetPromptResult{Messages: []*server.PromptMessage{{Role: "user", Content: &server.EmbeddedResource{}}}}, nil
			}
			return nil, nil
		}))
}

func promptHarness(t *testing.T, opts ...server.Option) *harness {
	h := newHarness(t, opts...)
	addPrompts(t, h.srv)
	h.start()
	h.Initialize(protocol.Version20251125, nil)
	return h
}

func TestPromptsList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := promptHarness(t)
		// In the order registered (addPrompts), not by name.
		assert.JSONEq(t, `{"prompts":[
			{"name":"simple","description":"A simple prompt."},
			{"name":"with-args","title":"With Args","description":"Takes arguments.","icons":[{"src":"https://example.com/p.svg"}],
			 "arguments":[{"name":"arg1","title":"First","description":"Required.","required":true},{"name":"arg2"}],"_meta":{"k":true}},
			{"name":"all-content"},
			{"name":"errors","arguments":[{"name":"kind","required":true}]}
		]}`, string(h.featureCall(2, "prompts/list", nil)))
		h.finish()
	})
}

func TestPromptsPagination(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithPageSize(2))
		nop := func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) { return nil, nil }
		for _, name := range []string{"e", "c", "a", "d", "b"} {
			require.NoError(t, h.srv.AddPrompt(server.Prompt{Name: name}, nop))
		}
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		var pages []string
		cursor, id := "", int64(2)
		for {
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			var p struct {
				Prompts []struct {
					Name string `json:"name"`
				} `json:"prompts"`
				NextCursor string `json:"nextCursor"`
			}
			require.NoError(t, json.Unmarshal(h.featureCall(id, "prompts/list", params), &p))
			id++
			var names []string
			for _, pr := range p.Prompts {
				names = append(names, pr.Name)
			}
			pages = append(pages, strings.Join(names, ","))
			if p.NextCursor == "" {
				break
			}
			cursor = p.NextCursor
		}
		assert.Equal(t, []string{"e,c", "a,d", "b"}, pages) // in the order registered
		// A prompt registered again keeps its place; a new one comes last.
		require.NoError(t, h.srv.AddPrompt(server.Prompt{Name: "c", Description: "again"}, nop))
		require.NoError(t, h.srv.AddPrompt(server.Prompt{Name: "0"}, nop))
		require.Equal(t, 1, h.srv.RemovePrompts("e"))
		var again struct {
			Prompts []struct {
				Name string `json:"name"`
			} `json:"prompts"`
		}
		require.NoError(t, json.Unmarshal(h.featureCall(id, "prompts/list", map[string]any{"cursor": cursor}), &again))
		var names []string
		for _, pr := range again.Prompts {
			names = append(names, pr.Name)
		}
		assert.Equal(t, []string{"b", "0"}, names) // the last page's cursor still follows "d"; "c", replaced, is not there again
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.featureError(10, "prompts/list", map[string]any{"cursor": "bogus"}).Code)
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.featureError(11, "prompts/list", map[string]any{"cursor": 5}).Code)
		h.finish()
	})
}

func TestGetPrompt(t *testing.T) {
	tests := []struct {
		name   string
		params any
		want   string
	}{
		{"no arguments", map[string]any{"name": "simple"}, `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}`},
		{"null arguments", map[string]any{"name": "simple", "arguments": nil}, `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}`},
		{"empty arguments", map[string]any{"name": "simple", "arguments": map[string]any{}}, `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}`},
		{
			"required and optional arguments",
			map[string]any{"name": "with-args", "arguments": map[string]any{"arg1": "one", "arg2": "two"}},
			`{"description":"args of with-args","messages":[{"role":"user","content":{"type":"text","text":"arg1=one,arg2=two"}}]}`,
		},
		{
			"optional argument left out, empty value counts",
			map[string]any{"name": "with-args", "arguments": map[string]any{"arg1": ""}},
			`{"description":"args of with-args","messages":[{"role":"user","content":{"type":"text","text":"arg1="}}]}`,
		},
		{"nil result", map[string]any{"name": "errors", "arguments": map[string]any{"kind": "none"}}, `{"messages":[]}`},
		{
			"every content type",
			map[string]any{"name": "all-content"},
			`{"_meta":{"m":"v"},"messages":[
				{"role":"user","content":{"type":"text","text":"t","annotations":{"audience":["assistant"],"priority":1},"_meta":{"x":1}}},
				{"role":"assistant","content":{"type":"image","data":"cG5n","mimeType":"image/png"}},
				{"role":"user","content":{"type":"audio","data":"d2F2","mimeType":"audio/wav"}},
				{"role":"user","content":{"type":"resource_link","uri":"test://r","name":"r","title":"R","description":"d","mimeType":"text/plain","size":4,
				  "icons":[{"src":"https://example.com/r.png","sizes":["48x48"],"theme":"dark"}]}},
				{"role":"user","content":{"type":"resource","resource":{"uri":"test://e","mimeType":"text/plain","text":"embedded"}}},
				{"role":"assistant","content":{"type":"resource","resource":{"uri":"test://b","mimeType":"application/octet-stream","blob":"/wA="},
				  "annotations":{"lastModified":"2025-01-01T00:00:00Z"}}}
			]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := promptHarness(t)
				assert.JSONEq(t, tt.want, string(h.featureCall(2, "prompts/get", tt.params)))
				h.finish()
			})
		})
	}
}

func TestGetPromptErrors(t *testing.T) {
	errs := func(kind string) map[string]any {
		return map[string]any{"name": "errors", "arguments": map[string]any{"kind": kind}}
	}
	tests := []struct {
		name     string
		params   any
		wantCode protocol.Code
		wantMsg  string // a part of the message; "" to skip
	}{
		{"unknown prompt", map[string]any{"name": "nope"}, protocol.CodeInvalidParams, `unknown prompt: "nope"`},
		{"no params", nil, protocol.CodeInvalidParams, "name"},
		{"params an array", []string{"simple"}, protocol.CodeInvalidParams, "name"},
		{"no name", map[string]any{"arguments": map[string]any{}}, protocol.CodeInvalidParams, "name"},
		{"empty name", map[string]any{"name": ""}, protocol.CodeInvalidParams, "name"},
		{"name not a string", map[string]any{"name": 3}, protocol.CodeInvalidParams, "name"},
		{"arguments an array", map[string]any{"name": "simple", "arguments": []string{"a"}}, protocol.CodeInvalidParams, "arguments must be an object of strings"},
		{"arguments a string", map[string]any{"name": "simple", "arguments": "a=b"}, protocol.CodeInvalidParams, "arguments must be an object of strings"},
		{"argument not a string", map[string]any{"name": "with-args", "arguments": map[string]any{"arg1": 1}}, protocol.CodeInvalidParams, "arguments must be an object of strings"},
		{"argument null", map[string]any{"name": "with-args", "arguments": map[string]any{"arg1": nil}}, protocol.CodeInvalidParams, "arguments must be an object of strings"},
		{"missing required argument", map[string]any{"name": "with-args", "arguments": map[string]any{"arg2": "x"}}, protocol.CodeInvalidParams, `missing required argument "arg1"`},
		{"missing required argument, no arguments", map[string]any{"name": "with-args"}, protocol.CodeInvalidParams, `missing required argument "arg1"`},
		{"unknown argument", map[string]any{"name": "with-args", "arguments": map[string]any{"arg1": "x", "zz": "y", "arg9": "z"}}, protocol.CodeInvalidParams, `unknown argument "arg9"`},
		{"handler protocol error", errs("protocol"), protocol.CodeInvalidParams, "kind is not allowed"},
		{"handler plain error", errs("internal"), protocol.CodeInternal, "internal error"},
		{"message with a bad role", errs("bad-role"), protocol.CodeInternal, "internal error"},
		{"message without content", errs("nil-content"), protocol.CodeInternal, "internal error"},
		{"nil message", errs("nil-message"), protocol.CodeInternal, "internal error"},
		{"content that cannot encode", errs("bad-embedded"), protocol.CodeInternal, "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := promptHarness(t)
				e := h.featureError(2, "prompts/get", tt.params)
				assert.Equal(t, int64(tt.wantCode), e.Code)
				assert.Contains(t, e.Message, tt.wantMsg)
				// The session goes on serving.
				assert.JSONEq(t, `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}`,
					string(h.featureCall(3, "prompts/get", map[string]any{"name": "simple"})))
				h.finish()
			})
		})
	}
}

func TestAddPromptRejectsInvalid(t *testing.T) {
	testkit.Watchdog(t)
	nop := func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) { return nil, nil }
	tests := []struct {
		name   string
		prompt server.Prompt
		h      server.PromptHandler
	}{
		{"empty name", server.Prompt{}, nop},
		{"nil handler", server.Prompt{Name: "p"}, nil},
		{"empty argument name", server.Prompt{Name: "p", Arguments: []server.PromptArgument{{Name: ""}}}, nop},
		{"repeated argument", server.Prompt{Name: "p", Arguments: []server.PromptArgument{{Name: "a"}, {Name: "b"}, {Name: "a", Required: true}}}, nop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := server.New()
			require.Error(t, srv.AddPrompt(tt.prompt, tt.h))
			assert.Zero(t, srv.RemovePrompts(tt.prompt.Name), "nothing was registered")
		})
	}
}

func TestPromptListChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := promptHarness(t)
		nop := func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) { return nil, nil }
		require.NoError(t, h.srv.AddPrompt(server.Prompt{Name: "new"}, nop))
		require.NoError(t, h.srv.AddPrompt(server.Prompt{Name: "simple"}, nop)) // a replacement
		m, ok := h.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/prompts/list_changed", m.Method)
		h.expectNothingPending(2)
		assert.JSONEq(t, `{"messages":[]}`, string(h.featureCall(3, "prompts/get", map[string]any{"name": "simple"})), "the replacement serves")

		assert.Equal(t, 2, h.srv.RemovePrompts("new", "simple", "never"))
		m, ok = h.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/prompts/list_changed", m.Method)
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.featureError(4, "prompts/get", map[string]any{"name": "simple"}).Code)

		assert.Zero(t, h.srv.RemovePrompts("new"))
		time.Sleep(time.Second)
		h.expectNothingPending(5)
		h.finish()
	})
}
