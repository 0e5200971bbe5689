package clients

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// eras are the protocol revisions the suite speaks: the 2025 session era
// and the 2026 stateless one.
var eras = []string{"2025-11-25", "2026-07-28"}

// goSDKEvents is what the go-sdk client's handlers received.
type goSDKEvents struct {
	mu       sync.Mutex
	progress []float64
	logs     []string
	updated  chan string
}

func (e *goSDKEvents) snapshot() (progress []float64, logs []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]float64(nil), e.progress...), append([]string(nil), e.logs...)
}

// goSDKClient returns a go-sdk client whose sampling, elicitation, roots,
// progress, logging and resource-update handlers record what they get.
func goSDKClient() (*mcp.Client, *goSDKEvents) {
	ev := &goSDKEvents{updated: make(chan string, 8)}
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-suite", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) { //nolint:staticcheck // SA1019: the suite checks the deprecated features too
			prompt := ""
			if len(req.Params.Messages) > 0 {
				if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
					prompt = tc.Text
				}
			}
			return &mcp.CreateMessageResult{Model: "suite", Role: "assistant", Content: &mcp.TextContent{Text: "echo of " + prompt}}, nil //nolint:staticcheck // SA1019: the suite checks the deprecated features too
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			ev.mu.Lock()
			defer ev.mu.Unlock()
			ev.progress = append(ev.progress, req.Params.Progress)
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { //nolint:staticcheck // SA1019: the suite checks the deprecated features too
			ev.mu.Lock()
			defer ev.mu.Unlock()
			ev.logs = append(ev.logs, string(req.Params.Level))
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case ev.updated <- req.Params.URI:
			default:
			}
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///suite/project", Name: "project"}) //nolint:staticcheck // SA1019: the suite checks the deprecated features too
	return c, ev
}

// TestFeaturesGoSDK drives vigil-everything with the official Go SDK
// client (go-sdk v1.8.0) in both eras, over Streamable HTTP and stdio:
// initialize, tools (every list page, text, an error result, structured
// content), resources, templates, prompts, completion, progress, logging,
// sampling, elicitation, roots and a resource subscription.
func TestFeaturesGoSDK(t *testing.T) {
	t.Parallel() // its own server: see doc.go
	srv := startServer(t, everythingBin)
	for _, era := range eras {
		for _, tr := range []string{"http", "stdio"} {
			t.Run(tr+"-"+era, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				client, ev := goSDKClient()
				var sent *postedMethods
				var transport mcp.Transport
				if tr == "stdio" {
					transport = &mcp.CommandTransport{Command: exec.Command(everythingBin, "-stdio")}
				} else {
					sent = &postedMethods{}
					transport = &mcp.StreamableClientTransport{Endpoint: srv.mcp, HTTPClient: &http.Client{Transport: sent}}
				}
				cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: era})
				require.NoError(t, err)
				defer func() { assert.NoError(t, cs.Close()) }()
				checkGoSDK(ctx, t, cs, ev, era, sent)
			})
		}
	}
}

// checkGoSDK runs the feature checks on cs; sent, when not nil, has the
// methods the client posted (HTTP).
func checkGoSDK(ctx context.Context, t *testing.T, cs *mcp.ClientSession, ev *goSDKEvents, era string, sent *postedMethods) {
	init := cs.InitializeResult()
	require.NotNil(t, init)
	assert.Equal(t, era, init.ProtocolVersion)
	assert.Equal(t, "vigil-everything", init.ServerInfo.Name)

	t.Run("ping", func(t *testing.T) {
		if era != "2026-07-28" {
			require.NoError(t, cs.Ping(ctx, nil))
			return
		}
		// Known client bug goSDKPing2026: ping is gone from 2026-07-28, and
		// go-sdk still sends it (without the _meta every request of that
		// revision carries). What the server answers is its own business;
		// the check is that the client sends it: when it stops (an error of
		// its own, or a no-op), this fails.
		err := cs.Ping(ctx, nil)
		t.Logf("known client bug goSDKPing2026: ping in a 2026-07-28 session: %v", err)
		if sent != nil {
			assert.True(t, sent.has("ping"), "known client bug goSDKPing2026: go-sdk sends ping in 2026-07-28")
		}
	})

	t.Run("tools", func(t *testing.T) {
		var names []string
		for tool, err := range cs.Tools(ctx, nil) {
			require.NoError(t, err)
			names = append(names, tool.Name)
		}
		for _, want := range []string{"test_simple_text", "test_error_handling", "test_tool_with_progress", "test_sampling", "vigil_structured"} {
			assert.Contains(t, names, want)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
		require.NoError(t, err)
		assert.False(t, res.IsError)
		assert.Equal(t, "This is a simple text response for testing.", goSDKText(res.Content))

		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_error_handling"})
		require.NoError(t, err)
		assert.True(t, res.IsError)

		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "vigil_structured", Arguments: map[string]any{"a": 6, "b": 7}})
		require.NoError(t, err)
		got, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		assert.JSONEq(t, `{"sum":13,"product":42}`, string(got))
	})

	t.Run("resources", func(t *testing.T) {
		var uris []string
		for r, err := range cs.Resources(ctx, nil) {
			require.NoError(t, err)
			uris = append(uris, r.URI)
		}
		assert.Contains(t, uris, "test://static-text")
		read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
		require.NoError(t, err)
		require.Len(t, read.Contents, 1)
		assert.Equal(t, "This is the content of the static text resource.", read.Contents[0].Text)

		var templates []string
		for rt, err := range cs.ResourceTemplates(ctx, nil) {
			require.NoError(t, err)
			templates = append(templates, rt.URITemplate)
		}
		assert.Contains(t, templates, "test://template/{id}/data")
		read, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/42/data"})
		require.NoError(t, err)
		require.Len(t, read.Contents, 1)
		assert.Contains(t, read.Contents[0].Text, "42")
	})

	t.Run("prompts", func(t *testing.T) {
		var names []string
		for p, err := range cs.Prompts(ctx, nil) {
			require.NoError(t, err)
			names = append(names, p.Name)
		}
		assert.Contains(t, names, "test_prompt_with_arguments")
		got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "x1", "arg2": "y2"}})
		require.NoError(t, err)
		require.NotEmpty(t, got.Messages)
		text := goSDKText([]mcp.Content{got.Messages[0].Content})
		assert.Contains(t, text, "x1")
		assert.Contains(t, text, "y2")
	})

	t.Run("completion", func(t *testing.T) {
		res, err := cs.Complete(ctx, &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"},
			Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: ""},
		})
		require.NoError(t, err)
		assert.NotEmpty(t, res.Completion.Values)
	})

	t.Run("progress", func(t *testing.T) {
		p := &mcp.CallToolParams{Name: "test_tool_with_progress"}
		p.SetProgressToken("go-sdk-progress")
		res, err := cs.CallTool(ctx, p)
		require.NoError(t, err)
		assert.Equal(t, "go-sdk-progress", goSDKText(res.Content))
		waitFor(t, 5*time.Second, "three progress notifications", func() bool {
			progress, _ := ev.snapshot()
			return len(progress) == 3
		})
		progress, _ := ev.snapshot()
		assert.Equal(t, []float64{0, 50, 100}, progress)
	})

	t.Run("logging", func(t *testing.T) {
		if era == "2025-11-25" {
			require.NoError(t, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"})) //nolint:staticcheck // SA1019: the suite checks the deprecated features too
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "vigil_log_levels"})
		require.NoError(t, err)
		assert.False(t, res.IsError)
		if era == "2025-11-25" {
			waitFor(t, 5*time.Second, "two log notifications (warning and error)", func() bool {
				_, logs := ev.snapshot()
				return len(logs) == 2
			})
			_, logs := ev.snapshot()
			assert.Equal(t, []string{"warning", "error"}, logs)
		}
	})

	t.Run("sampling", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "hi there"}})
		require.NoError(t, err)
		assert.Equal(t, "LLM response: echo of hi there", goSDKText(res.Content))
	})

	t.Run("elicitation", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "who?"}})
		require.NoError(t, err)
		assert.Equal(t, `User response: action=accept, content={"email":"ada@example.com","username":"ada"}`, goSDKText(res.Content))
	})

	t.Run("roots", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "vigil_roots"})
		require.NoError(t, err)
		got, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		assert.Contains(t, string(got), "file:///suite/project", goSDKText(res.Content))
	})

	if era == "2025-11-25" {
		t.Run("subscribe", func(t *testing.T) {
			require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched-resource"}))
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "vigil_touch_resource"})
			require.NoError(t, err)
			select {
			case uri := <-ev.updated:
				assert.Equal(t, "test://watched-resource", uri)
			case <-time.After(10 * time.Second):
				t.Fatal("no notifications/resources/updated")
			}
			require.NoError(t, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://watched-resource"}))
		})
	}
}

// postedMethods is an http.RoundTripper that records the JSON-RPC method
// of each POST the client sends; it changes none.
type postedMethods struct {
	mu      sync.Mutex
	methods []string
}

func (p *postedMethods) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.GetBody != nil {
		if body, err := r.GetBody(); err == nil {
			var msg struct {
				Method string `json:"method"`
			}
			if json.NewDecoder(body).Decode(&msg) == nil && msg.Method != "" {
				p.mu.Lock()
				p.methods = append(p.methods, msg.Method)
				p.mu.Unlock()
			}
			_ = body.Close()
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (p *postedMethods) has(method string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.methods, method)
}

// goSDKText joins the text blocks of content.
func goSDKText(content []mcp.Content) string {
	var b strings.Builder
	for _, c := range content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// Known client bug goSDKRootsWithoutParams: go-sdk fails to decode a
// 2026-07-28 inputRequests entry for roots/list without params, which the
// schema makes optional (ListRootsRequest's params); with "params":{} it
// decodes. Vigil sends "params":{} for every input request, so the feature
// checks pass either way; when the client is fixed, the first decode
// succeeds and this fails.
func TestKnownBugGoSDKRootsWithoutParams(t *testing.T) {
	var m mcp.InputRequestMap
	require.NoError(t, json.Unmarshal([]byte(`{"r":{"method":"roots/list","params":{}}}`), &m))
	err := json.Unmarshal([]byte(`{"r":{"method":"roots/list"}}`), &m)
	require.Error(t, err, "known client bug goSDKRootsWithoutParams")
	assert.Contains(t, err.Error(), "unexpected end of JSON input")
}
