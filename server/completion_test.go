package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// withPrefix returns the candidates that start with prefix.
func withPrefix(prefix string, candidates ...string) []string {
	var out []string
	for _, c := range candidates {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// numberedValues returns n values: v0, v1, ...
func numberedValues(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "v" + strconv.Itoa(i)
	}
	return out
}

// addCompleters registers a prompt and a template with completers. seen
// receives every CompleteRequest.
func addCompleters(t testing.TB, srv *server.Server, seen chan<- *server.CompleteRequest) {
	record := func(f server.CompleteFunc) server.CompleteFunc {
		return func(ctx context.Context, req *server.CompleteRequest) ([]string, error) {
			seen <- req
			return f(ctx, req)
		}
	}
	require.NoError(t, srv.AddPrompt(server.Prompt{Name: "code", Arguments: []server.PromptArgument{
		{Name: "language", Required: true, Complete: record(func(_ context.Context, req *server.CompleteRequest) ([]string, error) {
			return withPrefix(req.Value, "go", "python", "perl"), nil
		})},
		{Name: "framework", Complete: record(func(_ context.Context, req *server.CompleteRequest) ([]string, error) {
			if req.Context["language"] == "python" {
				return withPrefix(req.Value, "django", "flask"), nil
			}
			return withPrefix(req.Value, "gin", "echo"), nil
		})},
		{Name: "count", Complete: record(func(_ context.Context, req *server.CompleteRequest) ([]string, error) {
			switch req.Value {
			case "fail":
				return nil, errors.New("secret detail")
			case "protocol":
				return nil, server.Errorf(protocol.CodeInvalidParams, "bad value")
			}
			n, err := strconv.Atoi(req.Value)
			if err != nil {
				return nil, server.Errorf(protocol.CodeInvalidParams, "not a number")
			}
			return numberedValues(n), nil
		})},
		{Name: "plain"},
	}}, func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) { return nil, nil }))
	require.NoError(t, srv.AddResourceTemplate(server.ResourceTemplate{
		URITemplate: "repo://{owner}/{name}", Name: "repo",
		Complete: map[string]server.CompleteFunc{"owner": record(func(_ context.Context, req *server.CompleteRequest) ([]string, error) {
			return withPrefix(req.Value, "golang", "google", "vigil-mcp"), nil
		})},
	}, func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		return nil, nil
	}))
	require.NoError(t, srv.AddResource(server.Resource{URI: "test://fixed", Name: "fixed"},
		func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return nil, nil
		}))
}

func promptRef(name string) map[string]any {
	return map[string]any{"type": "ref/prompt", "name": name}
}

func templateRef(uri string) map[string]any {
	return map[string]any{"type": "ref/resource", "uri": uri}
}

func completeArg(name, value string) map[string]any {
	return map[string]any{"name": name, "value": value}
}

func completionJSON(values []string, total int, hasMore bool) string {
	b, err := json.Marshal(values)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf(`{"completion":{"values":%s,"total":%d,"hasMore":%t}}`, b, total, hasMore)
}

func TestComplete(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]any
		want   string
		// wantReq is what the completer received; nil when none runs.
		wantReq *server.CompleteRequest
	}{
		{
			"prompt argument",
			map[string]any{"ref": promptRef("code"), "argument": completeArg("language", "p")},
			completionJSON([]string{"python", "perl"}, 2, false),
			&server.CompleteRequest{Ref: server.CompletionRef{Type: "ref/prompt", Name: "code"}, Argument: "language", Value: "p", Context: map[string]string{}},
		},
		{
			"prompt ref with a title",
			map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "code", "title": "Code"}, "argument": completeArg("language", "g")},
			completionJSON([]string{"go"}, 1, false),
			&server.CompleteRequest{Ref: server.CompletionRef{Type: "ref/prompt", Name: "code"}, Argument: "language", Value: "g", Context: map[string]string{}},
		},
		{
			"context arguments",
			map[string]any{"ref": promptRef("code"), "argument": completeArg("framework", ""), "context": map[string]any{"arguments": map[string]any{"language": "python"}}},
			completionJSON([]string{"django", "flask"}, 2, false),
			&server.CompleteRequest{Ref: server.CompletionRef{Type: "ref/prompt", Name: "code"}, Argument: "framework", Context: map[string]string{"language": "python"}},
		},
		{
			"empty context",
			map[string]any{"ref": promptRef("code"), "argument": completeArg("framework", "e"), "context": map[string]any{}},
			completionJSON([]string{"echo"}, 1, false),
			&server.CompleteRequest{Ref: server.CompletionRef{Type: "ref/prompt", Name: "code"}, Argument: "framework", Value: "e", Context: map[string]string{}},
		},
		{
			"no match",
			map[string]any{"ref": promptRef("code"), "argument": completeArg("language", "zz")},
			completionJSON([]string{}, 0, false),
			&server.CompleteRequest{Ref: server.CompletionRef{Type: "ref/prompt", Name: "code"}, Argument: "language", Value: "zz", Context: map[string]string{}},
		},
		{"argument without a completer", map[string]any{"ref": promptRef("code"), "argument": completeArg("plain", "x")}, completionJSON([]string{}, 0, false), nil},
		{
			"exactly 100 values",
			map[string]any{"ref": promptRef("code"), "argument": completeArg("count", "100")},
			completionJSON(numberedValues(100), 100, false),
			&server.CompleteRequest{Ref: server.CompletionRef{Type: "ref/prompt", Name: "code"}, Argument: "count", Value: "100", Context: map[string]string{}},
		},
		{
			"101 values are truncated",
			map[string]any{"ref": promptRef("code"), "argument": completeArg("count", "101")},
			completionJSON(numberedValues(100), 101, true),
			&server.CompleteRequest{Ref: server.CompletionRef{Type: "ref/prompt", Name: "code"}, Argument: "count", Value: "101", Context: map[string]string{}},
		},
		{
			"250 values are truncated",
			map[string]any{"ref": promptRef("code"), "argument": completeArg("count", "250")},
			completionJSON(numberedValues(100), 250, true),
			&server.CompleteRequest{Ref: server.CompletionRef{Type: "ref/prompt", Name: "code"}, Argument: "count", Value: "250", Context: map[string]string{}},
		},
		{
			"template variable",
			map[string]any{"ref": templateRef("repo://{owner}/{name}"), "argument": completeArg("owner", "go"), "context": map[string]any{"arguments": map[string]any{"name": "x"}}},
			completionJSON([]string{"golang", "google"}, 2, false),
			&server.CompleteRequest{Ref: server.CompletionRef{Type: "ref/resource", URI: "repo://{owner}/{name}"}, Argument: "owner", Value: "go", Context: map[string]string{"name": "x"}},
		},
		{"template variable without a completer", map[string]any{"ref": templateRef("repo://{owner}/{name}"), "argument": completeArg("name", "v")}, completionJSON([]string{}, 0, false), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				seen := make(chan *server.CompleteRequest, 1)
				h := newHarness(t)
				addCompleters(t, h.srv, seen)
				h.start()
				h.Initialize(protocol.Version20251125, nil)
				assert.JSONEq(t, tt.want, string(h.featureCall(2, "completion/complete", tt.params)))
				if tt.wantReq == nil {
					assert.Empty(t, seen)
				} else {
					got := <-seen
					require.NotNil(t, got.Request)
					assert.Equal(t, "completion/complete", got.Request.Method)
					got.Request = nil
					assert.Equal(t, tt.wantReq, got)
				}
				h.finish()
			})
		})
	}
}

func TestCompleteErrors(t *testing.T) {
	valid := func(extra map[string]any) map[string]any {
		p := map[string]any{"ref": promptRef("code"), "argument": completeArg("language", "g")}
		for k, v := range extra {
			if v == nil {
				delete(p, k)
			} else {
				p[k] = v
			}
		}
		return p
	}
	tests := []struct {
		name     string
		params   any
		wantCode protocol.Code
		wantMsg  string
	}{
		{"no params", nil, protocol.CodeInvalidParams, ""},
		{"params an array", []int{1}, protocol.CodeInvalidParams, ""},
		{"no ref", valid(map[string]any{"ref": nil}), protocol.CodeInvalidParams, "ref"},
		{"ref not an object", valid(map[string]any{"ref": "ref/prompt"}), protocol.CodeInvalidParams, ""},
		{"no argument", valid(map[string]any{"argument": nil}), protocol.CodeInvalidParams, "argument"},
		{"argument without name", valid(map[string]any{"argument": map[string]any{"value": "g"}}), protocol.CodeInvalidParams, "argument.name"},
		{"argument without value", valid(map[string]any{"argument": map[string]any{"name": "language"}}), protocol.CodeInvalidParams, "argument.value"},
		{"value not a string", valid(map[string]any{"argument": map[string]any{"name": "language", "value": 1}}), protocol.CodeInvalidParams, ""},
		{"unknown ref type", valid(map[string]any{"ref": map[string]any{"type": "ref/tool", "name": "code"}}), protocol.CodeInvalidParams, `unknown ref type "ref/tool"`},
		{"unknown prompt", valid(map[string]any{"ref": promptRef("nope")}), protocol.CodeInvalidParams, `unknown prompt: "nope"`},
		{"unknown prompt argument", valid(map[string]any{"argument": completeArg("nope", "")}), protocol.CodeInvalidParams, `has no argument "nope"`},
		{"unknown template", valid(map[string]any{"ref": templateRef("repo://{x}")}), protocol.CodeInvalidParams, `unknown resource template: "repo://{x}"`},
		{"fixed resource is no template", valid(map[string]any{"ref": templateRef("test://fixed")}), protocol.CodeInvalidParams, "unknown resource template"},
		{"unknown template variable", map[string]any{"ref": templateRef("repo://{owner}/{name}"), "argument": completeArg("language", "")}, protocol.CodeInvalidParams, `has no variable "language"`},
		{"context arguments not strings", valid(map[string]any{"context": map[string]any{"arguments": map[string]any{"a": 1}}}), protocol.CodeInvalidParams, "arguments must be an object of strings"},
		{"context arguments an array", valid(map[string]any{"context": map[string]any{"arguments": []string{"a"}}}), protocol.CodeInvalidParams, "arguments must be an object of strings"},
		{"completer protocol error", valid(map[string]any{"argument": completeArg("count", "protocol")}), protocol.CodeInvalidParams, "bad value"},
		{"completer plain error", valid(map[string]any{"argument": completeArg("count", "fail")}), protocol.CodeInternal, "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				addCompleters(t, h.srv, make(chan *server.CompleteRequest, 1))
				h.start()
				h.Initialize(protocol.Version20251125, nil)
				e := h.featureError(2, "completion/complete", tt.params)
				assert.Equal(t, int64(tt.wantCode), e.Code)
				assert.Contains(t, e.Message, tt.wantMsg)
				h.finish()
			})
		})
	}
}

func TestFeatureCapabilities(t *testing.T) {
	nopRead := func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		return nil, nil
	}
	nopPrompt := func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) { return nil, nil }
	nopComplete := func(context.Context, *server.CompleteRequest) ([]string, error) { return nil, nil }
	tests := []struct {
		name  string
		setup func(*server.Server) error
		want  string // the resources, prompts and completions capabilities
	}{
		{"nothing registered", func(*server.Server) error { return nil }, `{}`},
		{"a resource", func(s *server.Server) error {
			return s.AddResource(server.Resource{URI: "test://a", Name: "a"}, nopRead)
		}, `{"resources":{"subscribe":true,"listChanged":true}}`},
		{"a template", func(s *server.Server) error {
			return s.AddResourceTemplate(server.ResourceTemplate{URITemplate: "test://{a}", Name: "a"}, nopRead)
		}, `{"resources":{"subscribe":true,"listChanged":true}}`},
		{"a template with a completer", func(s *server.Server) error {
			return s.AddResourceTemplate(server.ResourceTemplate{URITemplate: "test://{a}", Name: "a", Complete: map[string]server.CompleteFunc{"a": nopComplete}}, nopRead)
		}, `{"resources":{"subscribe":true,"listChanged":true},"completions":{}}`},
		{"a prompt", func(s *server.Server) error {
			return s.AddPrompt(server.Prompt{Name: "p", Arguments: []server.PromptArgument{{Name: "x"}}}, nopPrompt)
		}, `{"prompts":{"listChanged":true}}`},
		{"a prompt with a completer", func(s *server.Server) error {
			return s.AddPrompt(server.Prompt{Name: "p", Arguments: []server.PromptArgument{{Name: "x"}, {Name: "y", Complete: nopComplete}}}, nopPrompt)
		}, `{"prompts":{"listChanged":true},"completions":{}}`},
		{"removed again", func(s *server.Server) error {
			if err := s.AddPrompt(server.Prompt{Name: "p", Arguments: []server.PromptArgument{{Name: "y", Complete: nopComplete}}}, nopPrompt); err != nil {
				return err
			}
			if err := s.AddResource(server.Resource{URI: "test://a", Name: "a"}, nopRead); err != nil {
				return err
			}
			s.RemovePrompts("p")
			s.RemoveResources("test://a")
			return nil
		}, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				require.NoError(t, tt.setup(h.srv))
				h.start()
				h.Request(1, "initialize", map[string]any{
					"protocolVersion": protocol.Version20251125, "capabilities": map[string]any{},
					"clientInfo": map[string]any{"name": "t", "version": "1"},
				})
				var res struct {
					Capabilities map[string]json.RawMessage `json:"capabilities"`
				}
				require.NoError(t, json.Unmarshal(h.RecvResult(1), &res))
				got := map[string]json.RawMessage{}
				for _, k := range []string{"resources", "prompts", "completions"} {
					if v, ok := res.Capabilities[k]; ok {
						got[k] = v
					}
				}
				b, err := json.Marshal(got)
				require.NoError(t, err)
				assert.JSONEq(t, tt.want, string(b))
				h.finish()
			})
		})
	}
}
