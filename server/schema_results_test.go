package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// mcpSchema is the JSON Schema of one protocol revision
// (testdata/mcp-schema), each <X>Result definition compiled on first use.
type mcpSchema struct {
	rev  string
	doc  map[string]any
	defs string // "$defs" or, in draft-07, "definitions"
	mu   sync.Mutex
	done map[string]*jsonschema.Resolved
}

func loadMCPSchema(t *testing.T, rev string) *mcpSchema {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "mcp-schema", rev+".json"))
	require.NoError(t, err)
	s := &mcpSchema{rev: rev, defs: "$defs", done: map[string]*jsonschema.Resolved{}}
	require.NoError(t, json.Unmarshal(data, &s.doc))
	if _, ok := s.doc["$defs"]; !ok {
		s.defs = "definitions"
	}
	return s
}

// resolved is the schema of definition def: the whole document with an
// allOf that refers to it, so that its own references resolve.
func (s *mcpSchema) resolved(t *testing.T, def string) *jsonschema.Resolved {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.done[def]; r != nil {
		return r
	}
	require.Contains(t, s.doc[s.defs], def, "%s has no %s", s.rev, def)
	doc := make(map[string]any, len(s.doc)+1)
	for k, v := range s.doc {
		doc[k] = v
	}
	doc["allOf"] = []any{map[string]any{"$ref": "#/" + s.defs + "/" + def}}
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	var sch jsonschema.Schema
	require.NoError(t, json.Unmarshal(raw, &sch))
	r, err := sch.Resolve(nil)
	require.NoError(t, err, "%s %s", s.rev, def)
	s.done[def] = r
	return r
}

// check validates raw against the definition def of the revision, and
// requires that no member anywhere in it is null: no result member of any
// revision's schema admits null, and extension results (skills, views,
// tasks of 2026-07-28) follow the same rule.
func (s *mcpSchema) check(t *testing.T, what, def string, raw json.RawMessage) {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v), "%s: %s", what, raw)
	if def != "" {
		require.NoError(t, s.resolved(t, def).Validate(v), "%s %s: %s against %s", s.rev, what, raw, def)
	}
	if path := nullPath(v, ""); path != "" {
		t.Errorf("%s %s: null at %s in %s", s.rev, what, path, raw)
	}
}

// nullPath is the path of the first null in v, or "".
func nullPath(v any, at string) string {
	switch v := v.(type) {
	case nil:
		if at == "" {
			return "(root)"
		}
		return at
	case map[string]any:
		for k, e := range v {
			if p := nullPath(e, at+"/"+k); p != "" {
				return p
			}
		}
	case []any:
		for _, e := range v {
			if p := nullPath(e, at+"/[]"); p != "" {
				return p
			}
		}
	}
	return ""
}

// resultCase is one request and the definition its result must satisfy.
type resultCase struct {
	method string
	params map[string]any
	def    string // "" for extension methods the schema does not have
}

// populatedServer has something of every feature: tools (text,
// structured, every content type, an error, one asking the client),
// resources with a template, prompts with a completer, skills and a view.
func populatedServer(t *testing.T) *server.Server {
	t.Helper()
	srv := server.New(server.WithImplementation("schema", "1.0"), server.WithInstructions("be valid"))
	obj := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	textTool := server.Tool{Name: "text", Title: "Text", Description: "text", InputSchema: obj, Annotations: &server.ToolAnnotations{Title: "t"}}
	require.NoError(t, srv.AddTool(textTool, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello"), nil
	}))
	require.NoError(t, srv.AddTool(server.Tool{Name: "structured", OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return &server.CallToolResult{StructuredContent: map[string]any{"n": 1}}, nil
		}))
	require.NoError(t, srv.AddTool(server.Tool{Name: "mixed"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return &server.CallToolResult{Content: []server.Content{
			&server.TextContent{Text: "t", Annotations: &server.Annotations{Audience: []string{"user"}}},
			&server.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"},
			&server.AudioContent{Data: []byte{3}, MIMEType: "audio/wav"},
			&server.ResourceLink{server.Resource{URI: "test://a", Name: "a"}},
			&server.EmbeddedResource{Resource: &server.ResourceContents{URI: "test://a", Text: "a"}},
		}}, nil
	}))
	require.NoError(t, srv.AddTool(server.Tool{Name: "empty"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return &server.CallToolResult{}, nil
	}))
	require.NoError(t, srv.AddTool(server.Tool{Name: "fails"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return nil, errors.New("boom")
	}))
	require.NoError(t, srv.AddTool(server.Tool{Name: "greet"}, greeter))
	require.NoError(t, srv.AddTool(server.Tool{Name: "roots"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		roots, err := server.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		return server.Text(roots[0].URI), nil
	}))
	require.NoError(t, srv.AddTool(taskTool("slow", server.TaskSupportOptional), func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("slow done"), nil
	}))
	require.NoError(t, srv.AddTool(taskTool("ask-roots", server.TaskSupportOptional), listRootsTool))
	require.NoError(t, srv.AddTool(taskTool("wait", server.TaskSupportOptional), func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	require.NoError(t, srv.AddResource(server.Resource{URI: "test://a", Name: "a", MIMEType: "text/plain"},
		func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return textContents("a"), nil
		}))
	require.NoError(t, srv.AddResource(server.Resource{URI: "test://bin", Name: "bin"},
		func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return &server.ReadResourceResult{Contents: []*server.ResourceContents{{Blob: []byte{0, 1}, MIMEType: "application/octet-stream"}}}, nil
		}))
	require.NoError(t, srv.AddResource(server.Resource{URI: "test://none", Name: "none"},
		func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return &server.ReadResourceResult{}, nil
		}))
	complete := func(context.Context, *server.CompleteRequest) ([]string, error) { return []string{"x", "y"}, nil }
	none := func(context.Context, *server.CompleteRequest) ([]string, error) { return nil, nil }
	require.NoError(t, srv.AddResourceTemplate(server.ResourceTemplate{URITemplate: "test://t/{id}", Name: "t", Complete: map[string]server.CompleteFunc{"id": none}},
		func(_ context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return textContents(req.Variables["id"]), nil
		}))
	require.NoError(t, srv.AddPrompt(server.Prompt{Name: "p", Arguments: []server.PromptArgument{{Name: "who", Required: true, Complete: complete}}},
		func(_ context.Context, req *server.GetPromptRequest) (*server.GetPromptResult, error) {
			return &server.GetPromptResult{Messages: []*server.PromptMessage{{Role: server.RoleUser, Content: &server.TextContent{Text: "hi " + req.Arguments["who"]}}}}, nil
		}))
	require.NoError(t, srv.AddPrompt(server.Prompt{Name: "bare"}, func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
		return &server.GetPromptResult{}, nil
	}))
	_, err := srv.AddSkills(skillFS())
	require.NoError(t, err)
	require.NoError(t, srv.AddView(server.View{URI: "ui://app/view", Name: "view", HTML: []byte("<!doctype html><p>v</p>")}))
	return srv
}

// featureCases are the requests of every feature, in both eras.
func featureCases() []resultCase {
	return []resultCase{
		{"tools/list", nil, "ListToolsResult"},
		{"tools/call", map[string]any{"name": "text", "arguments": map[string]any{"q": "x"}}, "CallToolResult"},
		{"tools/call", map[string]any{"name": "structured"}, "CallToolResult"},
		{"tools/call", map[string]any{"name": "mixed"}, "CallToolResult"},
		{"tools/call", map[string]any{"name": "empty"}, "CallToolResult"},
		{"tools/call", map[string]any{"name": "fails"}, "CallToolResult"},
		{"resources/list", nil, "ListResourcesResult"},
		{"resources/templates/list", nil, "ListResourceTemplatesResult"},
		{"resources/read", map[string]any{"uri": "test://a"}, "ReadResourceResult"},
		{"resources/read", map[string]any{"uri": "test://bin"}, "ReadResourceResult"},
		{"resources/read", map[string]any{"uri": "test://none"}, "ReadResourceResult"},
		{"resources/read", map[string]any{"uri": "test://t/7"}, "ReadResourceResult"},
		{"prompts/list", nil, "ListPromptsResult"},
		{"prompts/get", map[string]any{"name": "p", "arguments": map[string]any{"who": "Ada"}}, "GetPromptResult"},
		{"prompts/get", map[string]any{"name": "bare"}, "GetPromptResult"},
		{"completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "p"}, "argument": map[string]any{"name": "who", "value": ""}}, "CompleteResult"},
		{"completion/complete", map[string]any{"ref": map[string]any{"type": "ref/resource", "uri": "test://t/{id}"}, "argument": map[string]any{"name": "id", "value": ""}}, "CompleteResult"},
		{"skills/list", nil, ""},
		{"skills/get", map[string]any{"uri": "skill://git-workflow/SKILL.md"}, ""},
		{"resources/directory/read", map[string]any{"uri": "skill://acme/billing/refunds"}, ""},
	}
}

// TestResultsMatchTheSchema walks every result the server produces, in
// both eras, through the JSON Schema of each protocol revision it speaks:
// a server with nothing registered (every method it then declares) and
// one with something of every feature, and the empty lists of a declared
// capability; no result holds null where the schema has an array.
func TestResultsMatchTheSchema(t *testing.T) {
	schemas := map[string]*mcpSchema{}
	for _, rev := range []string{protocol.Version20250618, protocol.Version20251125, protocol.Version20260728} {
		schemas[rev] = loadMCPSchema(t, rev)
	}
	// answer sends a request and returns its result, or notes the method
	// in notFound when it is -32601 (any other error fails the test).
	answer := func(t *testing.T, h *harness, id int64, c resultCase, params map[string]any, notFound map[string]bool) json.RawMessage {
		h.Request(id, c.method, params)
		resp := h.RecvResponseTo(id)
		if resp.Error != nil {
			require.Equal(t, int64(protocol.CodeMethodNotFound), resp.Error.Code, "%s: %s", c.method, resp.Error.Message)
			notFound[c.method] = true
			return nil
		}
		return resp.Result
	}
	// session runs cases in a session of version v, after initialize, and
	// returns the methods answered -32601.
	session := func(t *testing.T, srv *server.Server, v string, cases []resultCase) map[string]bool {
		s, notFound := schemas[v], map[string]bool{}
		h := &harness{t: t, srv: srv}
		h.start()
		init := h.Initialize(v, map[string]any{"roots": map[string]any{}, "elicitation": map[string]any{}})
		raw, err := json.Marshal(init)
		require.NoError(t, err)
		s.check(t, "initialize", "InitializeResult", raw)
		for i, c := range append([]resultCase{{"ping", nil, "EmptyResult"}, {"logging/setLevel", map[string]any{"level": "error"}, "EmptyResult"}}, cases...) {
			if raw := answer(t, h, int64(100+i), c, c.params, notFound); raw != nil {
				s.check(t, c.method, c.def, raw)
			}
		}
		h.finish()
		return notFound
	}
	// stateless runs cases as 2026-07-28 requests.
	stateless := func(t *testing.T, srv *server.Server, cases []resultCase) map[string]bool {
		s, notFound := schemas[protocol.Version20260728], map[string]bool{}
		h := (&harness{t: t, srv: srv}).start()
		for i, c := range append([]resultCase{{"server/discover", nil, "DiscoverResult"}}, cases...) {
			params := map[string]any{"_meta": meta2026(map[string]any{"roots": map[string]any{}, "elicitation": map[string]any{}})}
			for k, v := range c.params {
				params[k] = v
			}
			if raw := answer(t, h, int64(100+i), c, params, notFound); raw != nil {
				s.check(t, c.method, c.def, raw)
			}
		}
		h.finish()
		return notFound
	}

	// Nothing registered: only what is always declared answers; every
	// feature's method is -32601, the same in both eras.
	t.Run("nothing registered", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			want := map[string]bool{}
			for _, c := range featureCases() {
				want[c.method] = true
			}
			assert.Equal(t, want, session(t, server.New(), protocol.Version20250618, featureCases()), "2025-06-18")
			assert.Equal(t, want, session(t, server.New(), protocol.Version20251125, featureCases()), "2025-11-25")
			assert.Equal(t, want, stateless(t, server.New(), featureCases()), "2026-07-28")
		})
	})

	// Capabilities declared with nothing to list: templates only, resources
	// only, tools all hidden from this caller.
	emptyLists := func(t *testing.T) *server.Server {
		srv := server.New(server.WithToolAccess(func(*server.Request, *server.Tool) bool { return false }))
		require.NoError(t, srv.AddTool(server.Tool{Name: "hidden"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("hidden"), nil
		}))
		require.NoError(t, srv.AddResourceTemplate(server.ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"},
			func(_ context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
				return textContents(req.Variables["id"]), nil
			}))
		return srv
	}
	emptyCases := []resultCase{{"tools/list", nil, "ListToolsResult"}, {"resources/list", nil, "ListResourcesResult"}}
	onlyResources := func(t *testing.T) *server.Server {
		srv := server.New()
		require.NoError(t, srv.AddResource(server.Resource{URI: "test://a", Name: "a"},
			func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
				return textContents("a"), nil
			}))
		return srv
	}
	templateCases := []resultCase{{"resources/templates/list", nil, "ListResourceTemplatesResult"}}
	t.Run("declared and empty", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			for _, v := range []string{protocol.Version20250618, protocol.Version20251125} {
				assert.Empty(t, session(t, emptyLists(t), v, emptyCases))
				assert.Empty(t, session(t, onlyResources(t), v, templateCases))
			}
			assert.Empty(t, stateless(t, emptyLists(t), emptyCases))
			assert.Empty(t, stateless(t, onlyResources(t), templateCases))
			// Tasks declared, none made yet.
			srv := server.New()
			require.NoError(t, srv.AddTool(taskTool("slow", server.TaskSupportOptional), func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return server.Text("slow"), nil
			}))
			assert.Empty(t, session(t, srv, protocol.Version20251125, []resultCase{{"tasks/list", nil, "ListTasksResult"}}))
		})
	})

	t.Run("populated", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := populatedServer(t)
			subscribe := []resultCase{
				{"resources/subscribe", map[string]any{"uri": "test://a"}, "EmptyResult"},
				{"resources/unsubscribe", map[string]any{"uri": "test://a"}, "EmptyResult"},
			}
			assert.Empty(t, session(t, srv, protocol.Version20250618, append(featureCases(), subscribe...)))
			assert.Empty(t, session(t, srv, protocol.Version20251125, append(featureCases(), subscribe...)))
			assert.Empty(t, stateless(t, srv, append(featureCases(),
				resultCase{"tools/call", map[string]any{"name": "greet"}, "InputRequiredResult"},
				resultCase{"tools/call", map[string]any{"name": "roots"}, "InputRequiredResult"},
			)))
		})
	})

	t.Run("tasks", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := schemas[protocol.Version20251125]
			h := (&harness{t: t, srv: populatedServer(t)}).start()
			h.Initialize(protocol.Version20251125, nil)
			call := func(id int64, method string, params map[string]any) json.RawMessage {
				h.Request(id, method, params)
				raw, _ := h.resultOf(id) // past the task's status notifications
				return raw
			}
			created := call(1, "tools/call", map[string]any{"name": "slow", "task": map[string]any{"ttl": 60000}})
			s.check(t, "tools/call as a task", "CreateTaskResult", created)
			id := decodeTask(t, created).Task.TaskID
			s.check(t, "tasks/result", "GetTaskPayloadResult", call(2, "tasks/result", map[string]any{"taskId": id}))
			s.check(t, "tasks/get", "GetTaskResult", call(3, "tasks/get", map[string]any{"taskId": id}))
			s.check(t, "tasks/list", "ListTasksResult", call(4, "tasks/list", nil))
			other := decodeTask(t, call(5, "tools/call", map[string]any{"name": "wait", "task": map[string]any{}})).Task.TaskID
			s.check(t, "tasks/cancel", "CancelTaskResult", call(6, "tasks/cancel", map[string]any{"taskId": other}))
			h.finish()

			// The tasks extension of 2026-07-28 is not in the schema: its
			// results hold no null either.
			s = schemas[protocol.Version20260728]
			x := (&harness{t: t, srv: populatedServer(t)}).start()
			caps := extCaps(map[string]any{"roots": map[string]any{}})
			v2 := func(id int64, method string, params map[string]any) json.RawMessage {
				x.v2(id, method, caps, params)
				return x.RecvResult(id)
			}
			id = decodeTask(t, v2(1, "tools/call", map[string]any{"name": "slow"})).TaskID
			synctest.Wait()
			s.check(t, "tasks/get (extension), completed", "", v2(2, "tasks/get", map[string]any{"taskId": id}))
			asks := decodeTask(t, v2(3, "tools/call", map[string]any{"name": "ask-roots"})).TaskID
			synctest.Wait()
			s.check(t, "tasks/get (extension), input_required", "", v2(4, "tasks/get", map[string]any{"taskId": asks}))
			s.check(t, "tasks/update (extension)", "", v2(5, "tasks/update", map[string]any{"taskId": asks, "inputResponses": map[string]any{"roots-list-0": map[string]any{"roots": []any{}}}}))
			s.check(t, "tasks/cancel (extension)", "", v2(6, "tasks/cancel", map[string]any{"taskId": decodeTask(t, v2(7, "tools/call", map[string]any{"name": "wait"})).TaskID}))
			x.finish()
		})
	})

	// subscriptions/listen answers once the server ends the stream.
	t.Run("listen", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := (&harness{t: t, srv: populatedServer(t)}).start()
			h.Request(1, "subscriptions/listen", map[string]any{"_meta": meta2026(nil), "notifications": map[string]any{"toolsListChanged": true}})
			h.notification() // the acknowledgment
			shutdown := make(chan error, 1)
			go func() { shutdown <- h.srv.Shutdown(context.Background()) }()
			schemas[protocol.Version20260728].check(t, "subscriptions/listen", "SubscriptionsListenResult", h.RecvResult(1))
			require.NoError(t, <-shutdown)
			require.ErrorIs(t, h.Wait(), server.ErrServerClosed)
		})
	})

	// A client that declares MCP Apps lists the tools with their views.
	t.Run("apps", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := appsServer(t)
			for _, v := range []string{protocol.Version20250618, protocol.Version20251125} {
				s := schemas[v]
				h := (&harness{t: t, srv: srv}).start()
				h.Initialize(v, uiCaps)
				s.check(t, "tools/list with views", "ListToolsResult", h.featureCall(1, "tools/list", nil))
				s.check(t, "resources/list with views", "ListResourcesResult", h.featureCall(2, "resources/list", nil))
				s.check(t, "resources/read of a view", "ReadResourceResult", h.featureCall(3, "resources/read", map[string]any{"uri": dashboardURI}))
				h.finish()
			}
			s := schemas[protocol.Version20260728]
			h := (&harness{t: t, srv: srv}).start()
			h.Request(1, "tools/list", map[string]any{"_meta": meta2026(uiCaps)})
			s.check(t, "tools/list with views", "ListToolsResult", h.RecvResult(1))
			h.finish()
		})
	})
}

// TestUndeclaredCapabilityMethodNotFound: a method behind a capability the
// server does not declare is -32601 in both eras, so that a client sees
// the same server whatever revision it speaks.
func TestUndeclaredCapabilityMethodNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := server.New()
		require.NoError(t, srv.AddTool(server.Tool{Name: "echo"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("echo"), nil
		}))
		methods := []struct {
			method string
			params map[string]any
		}{
			{"resources/list", nil},
			{"resources/templates/list", nil},
			{"resources/read", map[string]any{"uri": "test://a"}},
			{"prompts/list", nil},
			{"prompts/get", map[string]any{"name": "p"}},
			{"completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "p"}, "argument": map[string]any{"name": "a", "value": ""}}},
			{"skills/list", nil},
		}
		session := (&harness{t: t, srv: srv}).start()
		session.Initialize(protocol.Version20251125, nil)
		stateless := (&harness{t: t, srv: srv}).start()
		for i, m := range methods {
			e := session.featureError(int64(i), m.method, m.params)
			assert.Equal(t, int64(protocol.CodeMethodNotFound), e.Code, "2025-11-25 %s", m.method)
			params := map[string]any{"_meta": meta2026(nil)}
			for k, v := range m.params {
				params[k] = v
			}
			e = stateless.featureError(int64(i), m.method, params)
			assert.Equal(t, int64(protocol.CodeMethodNotFound), e.Code, "2026-07-28 %s", m.method)
			assert.Contains(t, e.Message, m.method)
		}
		// The declared capability answers in both.
		session.featureCall(100, "tools/list", nil)
		stateless.featureCall(100, "tools/list", map[string]any{"_meta": meta2026(nil)})
		session.finish()
		stateless.finish()
	})
}
