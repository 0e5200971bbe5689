package server_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// A tools/call result over its bound (the server's, or the tool's own) is
// answered as a tool error naming the bound, and its outcome says so; one
// within is answered as it is; a tool without a bound has none.
func TestResultTooLarge(t *testing.T) {
	cases := []struct {
		name     string
		opts     []server.Option
		toolMax  int
		size     int
		tooLarge bool
		limit    int
	}{
		{name: "default bound", size: 5 << 20, tooLarge: true, limit: server.DefaultMaxResultBytes},
		{name: "within the default", size: 3 << 20},
		{name: "server bound", opts: []server.Option{server.WithMaxResultBytes(1000)}, size: 2000, tooLarge: true, limit: 1000},
		{name: "tool bound under the server's", opts: []server.Option{server.WithMaxResultBytes(1 << 20)}, toolMax: 100, size: 200, tooLarge: true, limit: 100},
		{name: "tool bound over the server's", opts: []server.Option{server.WithMaxResultBytes(100)}, toolMax: 10000, size: 5000},
		{name: "tool without bound", opts: []server.Option{server.WithMaxResultBytes(100)}, toolMax: -1, size: 5 << 20},
		{name: "server without bound", opts: []server.Option{server.WithMaxResultBytes(0)}, size: 5 << 20},
	}
	for _, tc := range cases {
		for _, era := range []string{"session", "stateless"} {
			t.Run(tc.name+"/"+era, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					outs := make(chan server.Outcome, 4)
					opts := append([]server.Option{server.WithMiddleware(func(next server.Handler) server.Handler {
						return func(ctx context.Context, req *server.Request) (any, error) {
							if req.Method == "tools/call" {
								serverhook.Of[server.Outcome](ctx).OnDone(func(o server.Outcome) { outs <- o })
							}
							return next(ctx, req)
						}
					})}, tc.opts...)
					h := newHarness(t, opts...)
					require.NoError(t, h.srv.AddTool(server.Tool{Name: "big", MaxResultBytes: tc.toolMax},
						func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
							return server.Text(strings.Repeat("x", tc.size)), nil
						}))
					h.start()
					if era == "session" {
						h.Initialize(protocol.Version20251125, nil)
						h.SendCallTool(2, "big", nil)
					} else {
						h.v2(2, "tools/call", nil, map[string]any{"name": "big"})
					}
					text, isErr := toolText(t, h.RecvResult(2))
					out := <-outs // sealed once the answer is written
					if tc.tooLarge {
						assert.True(t, isErr)
						assert.Contains(t, text, "result too large")
						assert.Contains(t, text, " "+itoa(tc.limit)+" bytes")
						assert.True(t, out.ResultTooLarge)
						assert.True(t, out.ToolError())
					} else {
						assert.False(t, isErr)
						assert.Len(t, text, tc.size)
						assert.False(t, out.ResultTooLarge)
					}
					require.NoError(t, h.Close())
					require.NoError(t, h.Wait())
				})
			})
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A task's result, kept for the task's life, is bounded as a call's
// answer is.
func TestTaskResultTooLarge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		tool := taskTool("big", server.TaskSupportOptional)
		tool.MaxResultBytes = 100
		require.NoError(t, h.srv.AddTool(tool, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text(strings.Repeat("x", 1000)), nil
		}))
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		h.Request(3, "tools/call", map[string]any{"name": "big", "task": map[string]any{"ttl": 60000}})
		created, _ := h.resultOf(3)
		id := decodeTask(t, created).Task.TaskID
		require.NotEmpty(t, id)
		h.Request(4, "tasks/result", map[string]any{"taskId": id})
		res, _ := h.resultOf(4)
		text, isErr := toolText(t, res)
		assert.True(t, isErr)
		assert.Contains(t, text, "result too large")
		assert.Contains(t, text, "limit of 100 bytes")
		assert.Less(t, len(res), 1000)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// A result of resources/read (a resource's, a template's, a dynamic
// skill's), prompts/get or completion/complete over the server's bound is
// answered with -32603 naming the bound, in both eras, and its outcome
// says so; one within is answered as it is. A static skill file's read is
// bounded when the file is registered, not by the result bound: it is
// served whole.
func TestNonToolResultTooLarge(t *testing.T) {
	const limit = 1000
	big, small := strings.Repeat("x", 2*limit), strings.Repeat("x", limit/10)
	text := func(s string) *server.ReadResourceResult {
		return &server.ReadResourceResult{Contents: []*server.ResourceContents{{MIMEType: "text/plain", Text: s}}}
	}
	cases := []struct {
		name, method string
		params       map[string]any
		tooLarge     bool
	}{
		{"resource", "resources/read", map[string]any{"uri": "test://big"}, true},
		{"resource within", "resources/read", map[string]any{"uri": "test://small"}, false},
		{"template", "resources/read", map[string]any{"uri": "test://sized/2000"}, true},
		{"template within", "resources/read", map[string]any{"uri": "test://sized/10"}, false},
		{"dynamic skill", "resources/read", map[string]any{"uri": "skill://dynamic/big.txt"}, true},
		{"static skill", "resources/read", map[string]any{"uri": "skill://static/big.txt"}, false},
		{"prompt", "prompts/get", map[string]any{"name": "big"}, true},
		{"prompt within", "prompts/get", map[string]any{"name": "small"}, false},
		{"completion", "completion/complete", map[string]any{
			"ref":      map[string]any{"type": "ref/resource", "uri": "test://sized/{size}"},
			"argument": map[string]any{"name": "size", "value": "x"},
		}, true},
	}
	for _, tc := range cases {
		for _, era := range []string{"session", "stateless"} {
			t.Run(tc.name+"/"+era, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					outs := make(chan server.Outcome, 4)
					h := newHarness(t, server.WithMaxResultBytes(limit), server.WithMiddleware(func(next server.Handler) server.Handler {
						return func(ctx context.Context, req *server.Request) (any, error) {
							if req.Method == tc.method {
								serverhook.Of[server.Outcome](ctx).OnDone(func(o server.Outcome) { outs <- o })
							}
							return next(ctx, req)
						}
					}))
					for uri, s := range map[string]string{"test://big": big, "test://small": small} {
						require.NoError(t, h.srv.AddResource(server.Resource{URI: uri, Name: uri},
							func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
								return text(s), nil
							}))
					}
					require.NoError(t, h.srv.AddResourceTemplate(server.ResourceTemplate{
						URITemplate: "test://sized/{size}", Name: "sized",
						Complete: map[string]server.CompleteFunc{"size": func(context.Context, *server.CompleteRequest) ([]string, error) {
							values := make([]string, server.MaxCompletionValues)
							for i := range values {
								values[i] = small
							}
							return values, nil
						}},
					}, func(_ context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
						n, err := strconv.Atoi(req.Variables["size"])
						if err != nil {
							return nil, server.ErrResourceNotFound
						}
						return text(strings.Repeat("x", n)), nil
					}))
					for name, s := range map[string]string{"big": big, "small": small} {
						require.NoError(t, h.srv.AddPrompt(server.Prompt{Name: name},
							func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
								return &server.GetPromptResult{Messages: []*server.PromptMessage{{Role: "user", Content: &server.TextContent{Text: s}}}}, nil
							}))
					}
					require.NoError(t, h.srv.AddSkill(server.Skill{
						Path: "dynamic", Frontmatter: "name: dynamic\ndescription: d",
						Generate: func(context.Context, string) ([]byte, error) { return []byte(big), nil },
					}))
					require.NoError(t, h.srv.AddSkill(server.Skill{Path: "static", FS: fstest.MapFS{
						"SKILL.md": {Data: []byte("---\nname: static\ndescription: s\n---\n")},
						"big.txt":  {Data: []byte(big)},
					}}))
					h.start()
					if era == "session" {
						h.Initialize(protocol.Version20251125, nil)
						h.Request(2, tc.method, tc.params)
					} else {
						h.v2(2, tc.method, nil, tc.params)
					}
					resp, _ := h.readUntil(2)
					out := <-outs // sealed once the answer is written
					if tc.tooLarge {
						require.NotNil(t, resp.Error, "want an error, got %.100s", resp.Result)
						assert.Equal(t, int64(protocol.CodeInternal), resp.Error.Code)
						assert.Contains(t, resp.Error.Message, "result too large")
						assert.Contains(t, resp.Error.Message, "the limit of 1000 bytes")
						assert.True(t, out.ResultTooLarge)
						assert.Equal(t, protocol.CodeInternal, server.CodeOf(out.Err))
						assert.Nil(t, out.Result)
					} else {
						require.Nil(t, resp.Error)
						assert.False(t, out.ResultTooLarge)
						require.NoError(t, out.Err)
						if tc.name == "static skill" {
							assert.Contains(t, string(resp.Result), big)
						}
					}
					require.NoError(t, h.Close())
					require.NoError(t, h.Wait())
				})
			})
		}
	}
}
