package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// featureTool registers the tool "feature", which runs f and answers with
// its text; f's error goes to the returned channel too.
func featureTool(h *harness, f func(ctx context.Context) (string, error)) <-chan error {
	errs := make(chan error, 1)
	h.addTool("feature", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		text, err := f(ctx)
		errs <- err
		if err != nil {
			return nil, err
		}
		return server.Text(text), nil
	})
	return errs
}

// clientRequest reads the next message and requires a request to the
// client of method.
func clientRequest(t testing.TB, h *harness, method string) *transport.Request {
	t.Helper()
	m := h.Recv()
	r, ok := m.(*transport.Request)
	require.True(t, ok, "want a request, got %#v", m)
	require.True(t, r.ID.IsValid(), "want a request, got notification %s", r.Method)
	require.Equal(t, method, r.Method)
	return r
}

// answer sends the client's result (raw JSON) for r.
func answer(h *harness, r *transport.Request, result string) {
	h.Send(&transport.Response{ID: r.ID, Result: json.RawMessage(result)})
}

// finish ends a harness's session.
func finish(t *testing.T, h *harness) {
	require.NoError(t, h.Close())
	require.NoError(t, h.Wait())
}

// signupForm has every kind of field, with defaults.
func signupForm() json.RawMessage { return json.RawMessage(signupSchemaJSON) }

const signupSchemaJSON = `{"type":"object","properties":{` +
	`"name":{"type":"string","title":"Name","minLength":1,"maxLength":40,"default":"John Doe"},` +
	`"email":{"type":"string","format":"email"},` +
	`"age":{"type":"integer","minimum":0,"maximum":150,"default":30},` +
	`"score":{"type":"number","default":95.5},` +
	`"status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},` +
	`"plan":{"type":"string","oneOf":[{"const":"free","title":"Free"},{"const":"pro","title":"Pro"}]},` +
	`"legacy":{"type":"string","enum":["a","b"],"enumNames":["Option A","Option B"]},` +
	`"tags":{"type":"array","items":{"type":"string","enum":["x","y","z"]},"minItems":1,"default":["x"]},` +
	`"colors":{"type":"array","items":{"anyOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]},"maxItems":2},` +
	`"verified":{"type":"boolean","default":true}},` +
	`"required":["name","email"]}`

func TestElicitFormRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		errs := featureTool(h, func(ctx context.Context) (string, error) {
			res, err := server.Elicit(ctx, &server.ElicitParams{Message: "Sign up", RequestedSchema: signupForm()})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s %v", res.Action, res.Content), nil
		})
		h.start()
		h.Initialize(protocol.Version20251125, map[string]any{"elicitation": map[string]any{}})
		h.SendCallTool(2, "feature", `{}`)
		out := clientRequest(t, h, "elicitation/create")
		assert.JSONEq(t, `{"message":"Sign up","requestedSchema":`+signupSchemaJSON+`}`, string(out.Params))
		assert.Contains(t, string(out.Params), signupSchemaJSON, "sent as written: the form shows its properties in this order")
		answer(h, out, `{"action":"accept","content":{"name":"Jane","email":"j@x.org","age":25,"score":88,"status":"inactive",
			"plan":"pro","legacy":"b","tags":["x","z"],"colors":["g"],"verified":false,"extra":"kept"}}`)
		require.NoError(t, <-errs)
		text, _ := toolText(t, h.RecvResult(2))
		assert.Equal(t, "accept map[age:25 colors:[g] email:j@x.org extra:kept legacy:b name:Jane plan:pro score:88 status:inactive tags:[x z] verified:false]", text)
		finish(t, h)
	})
}

// A mode the client did not declare is refused before anything is sent.
func TestElicitModeNeedsCapability(t *testing.T) {
	form := &server.ElicitParams{Message: "m", RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)}
	url := &server.ElicitParams{Mode: server.ElicitModeURL, Message: "m", URL: "https://example.com/auth", ElicitationID: "e1"}
	for _, tc := range []struct {
		name    string
		caps    map[string]any
		params  *server.ElicitParams
		allowed bool
	}{
		{name: "no elicitation, form", caps: nil, params: form},
		{name: "no elicitation, url", caps: nil, params: url},
		{name: "empty means form only: form", caps: map[string]any{}, params: form, allowed: true},
		{name: "empty means form only: url", caps: map[string]any{}, params: url},
		{name: "form only: url", caps: map[string]any{"form": map[string]any{}}, params: url},
		{name: "url only: form", caps: map[string]any{"url": map[string]any{}}, params: form},
		{name: "url only: url", caps: map[string]any{"url": map[string]any{}}, params: url, allowed: true},
		{name: "both: form", caps: map[string]any{"form": map[string]any{}, "url": map[string]any{}}, params: form, allowed: true},
		{name: "both: url", caps: map[string]any{"form": map[string]any{}, "url": map[string]any{}}, params: url, allowed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				errs := featureTool(h, func(ctx context.Context) (string, error) {
					res, err := server.Elicit(ctx, tc.params)
					if err != nil {
						return "", err
					}
					return res.Action, nil
				})
				h.start()
				clientCaps := map[string]any{}
				if tc.caps != nil {
					clientCaps["elicitation"] = tc.caps
				}
				h.Initialize(protocol.Version20251125, clientCaps)
				h.SendCallTool(2, "feature", `{}`)
				if tc.allowed {
					answer(h, clientRequest(t, h, "elicitation/create"), `{"action":"decline"}`)
					require.NoError(t, <-errs)
					text, _ := toolText(t, h.RecvResult(2))
					assert.Equal(t, "decline", text)
				} else {
					require.ErrorIs(t, <-errs, server.ErrCapability)
					_, isErr := toolText(t, h.RecvResult(2)) // the next message: nothing was sent
					assert.True(t, isErr)
				}
				finish(t, h)
			})
		})
	}
}

func TestElicitURLModeAndCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		errs := featureTool(h, func(ctx context.Context) (string, error) {
			res, err := server.Elicit(ctx, &server.ElicitParams{
				Mode: server.ElicitModeURL, Message: "Authorize access", URL: "https://example.com/oauth?s=1", ElicitationID: "el-7",
			})
			if err != nil {
				return "", err
			}
			if err := server.NotifyElicitationComplete(ctx, "el-7"); err != nil {
				return "", err
			}
			return fmt.Sprintf("%s %v", res.Action, res.Content == nil), nil
		})
		h.start()
		h.Initialize(protocol.Version20251125, map[string]any{"elicitation": map[string]any{"url": map[string]any{}}})
		h.SendCallTool(2, "feature", `{}`)
		out := clientRequest(t, h, "elicitation/create")
		assert.JSONEq(t, `{"mode":"url","message":"Authorize access","url":"https://example.com/oauth?s=1","elicitationId":"el-7"}`, string(out.Params))
		answer(h, out, `{"action":"accept"}`)
		assert.JSONEq(t, `{"elicitationId":"el-7"}`, notificationParams(t, h, "notifications/elicitation/complete"))
		require.NoError(t, <-errs)
		text, _ := toolText(t, h.RecvResult(2))
		assert.Equal(t, "accept true", text)
		finish(t, h)
	})
}

func TestNotifyElicitationCompleteNeedsURLCapability(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		errs := featureTool(h, func(ctx context.Context) (string, error) {
			return "", server.NotifyElicitationComplete(ctx, "e")
		})
		h.start()
		h.Initialize(protocol.Version20251125, map[string]any{"elicitation": map[string]any{}})
		h.SendCallTool(2, "feature", `{}`)
		require.ErrorIs(t, <-errs, server.ErrCapability)
		h.RecvResult(2)
		require.ErrorIs(t, server.NotifyElicitationComplete(context.Background(), "e"), server.ErrNoRequest)
		finish(t, h)
	})
}

// Invalid params are refused before anything is sent.
func TestElicitInvalidParams(t *testing.T) {
	schema := func(s string) *server.ElicitParams {
		return &server.ElicitParams{Message: "m", RequestedSchema: json.RawMessage(s)}
	}
	prop := func(p string) *server.ElicitParams {
		return schema(`{"type":"object","properties":{"f":` + p + `}}`)
	}
	empty := json.RawMessage(`{"type":"object","properties":{}}`)
	for _, tc := range []struct {
		name   string
		params *server.ElicitParams
		want   string // in the error, when set
	}{
		{name: "nil", params: nil},
		{name: "no message", params: &server.ElicitParams{RequestedSchema: empty}},
		{name: "form without schema", params: &server.ElicitParams{Message: "m"}},
		{name: "form with a url", params: &server.ElicitParams{Message: "m", RequestedSchema: empty, URL: "https://x"}},
		{name: "url without url", params: &server.ElicitParams{Mode: server.ElicitModeURL, Message: "m", ElicitationID: "e"}},
		{name: "url without id", params: &server.ElicitParams{Mode: server.ElicitModeURL, Message: "m", URL: "https://x"}},
		{name: "url with a schema", params: &server.ElicitParams{Mode: server.ElicitModeURL, Message: "m", URL: "https://x", ElicitationID: "e", RequestedSchema: empty}},
		{name: "unknown mode", params: &server.ElicitParams{Mode: "telepathy", Message: "m"}},
		{name: "not JSON", params: schema(`{"type":`)},
		{name: "not an object schema", params: schema(`{"type":"string"}`), want: `"type": "object"`},
		{name: "no properties", params: schema(`{"type":"object"}`), want: `"properties"`},
		{name: "unknown keyword", params: schema(`{"type":"object","properties":{},"additionalProperties":false}`), want: "additionalProperties"},
		{name: "required not a property", params: schema(`{"type":"object","properties":{},"required":["a"]}`), want: `"a"`},
		{name: "nested object", params: prop(`{"type":"object","properties":{"g":{"type":"string"}}}`), want: `property "f": type "object"`},
		{name: "enum on a number", params: prop(`{"type":"number","enum":["1"]}`), want: `property "f": format, minLength`},
		{name: "minimum on a string", params: prop(`{"type":"string","minimum":1}`), want: "minimum and maximum"},
		{name: "array without items", params: prop(`{"type":"array"}`), want: "an array needs items"},
		{name: "items with both", params: prop(`{"type":"array","items":{"type":"string","enum":["a"],"anyOf":[{"const":"a","title":"A"}]}}`)},
		{name: "items of numbers", params: prop(`{"type":"array","items":{"type":"number","enum":[1]}}`)},
		{name: "items on a string", params: prop(`{"type":"string","items":{"type":"string","enum":["a"]}}`)},
		{name: "enum and oneOf", params: prop(`{"type":"string","enum":["a"],"oneOf":[{"const":"a","title":"A"}]}`)},
		{name: "enumNames count", params: prop(`{"type":"string","enum":["a","b"],"enumNames":["A"]}`)},
		{name: "unknown format", params: prop(`{"type":"string","format":"phone"}`), want: `format "phone"`},
		{name: "unknown property keyword", params: prop(`{"type":"string","pattern":"^a"}`), want: `property "f": json: unknown field "pattern"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				errs := featureTool(h, func(ctx context.Context) (string, error) {
					_, err := server.Elicit(ctx, tc.params)
					return "", err
				})
				h.start()
				h.Initialize(protocol.Version20251125, map[string]any{"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}})
				h.SendCallTool(2, "feature", `{}`)
				err := <-errs
				require.Error(t, err)
				require.NotErrorIs(t, err, server.ErrCapability)
				assert.Contains(t, err.Error(), tc.want)
				h.RecvResult(2) // nothing was sent to the client
				finish(t, h)
			})
		})
	}
}

// An answer that does not match the schema is an error; extra fields and
// absent optional ones are fine.
func TestElicitAnswerChecked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer string
		ok     bool
	}{
		{name: "minimal accept", answer: `{"action":"accept","content":{"name":"A","email":"a@b.c"}}`, ok: true},
		{name: "decline has no content", answer: `{"action":"decline"}`, ok: true},
		{name: "cancel ignores content", answer: `{"action":"cancel","content":{"name":1}}`, ok: true},
		{name: "unknown action", answer: `{"action":"maybe"}`},
		{name: "no action", answer: `{}`},
		{name: "not an object", answer: `[]`},
		{name: "required missing", answer: `{"action":"accept","content":{"name":"A"}}`},
		{name: "accept without content", answer: `{"action":"accept"}`},
		{name: "wrong type", answer: `{"action":"accept","content":{"name":5,"email":"a@b.c"}}`},
		{name: "too short", answer: `{"action":"accept","content":{"name":"","email":"a@b.c"}}`},
		{name: "too long", answer: `{"action":"accept","content":{"name":"` + fmt.Sprintf("%041d", 0) + `","email":"a@b.c"}}`},
		{name: "not an integer", answer: `{"action":"accept","content":{"name":"A","email":"a@b.c","age":2.5}}`},
		{name: "out of range", answer: `{"action":"accept","content":{"name":"A","email":"a@b.c","age":151}}`},
		{name: "number as string", answer: `{"action":"accept","content":{"name":"A","email":"a@b.c","score":"1"}}`},
		{name: "not in enum", answer: `{"action":"accept","content":{"name":"A","email":"a@b.c","status":"gone"}}`},
		{name: "not in oneOf", answer: `{"action":"accept","content":{"name":"A","email":"a@b.c","plan":"gold"}}`},
		{name: "multi-select item not allowed", answer: `{"action":"accept","content":{"name":"A","email":"a@b.c","tags":["x","w"]}}`},
		{name: "multi-select too few", answer: `{"action":"accept","content":{"name":"A","email":"a@b.c","tags":[]}}`},
		{name: "multi-select too many", answer: `{"action":"accept","content":{"name":"A","email":"a@b.c","colors":["r","g","r"]}}`},
		{name: "multi-select not an array", answer: `{"action":"accept","content":{"name":"A","email":"a@b.c","colors":"r"}}`},
		{name: "boolean as string", answer: `{"action":"accept","content":{"name":"A","email":"a@b.c","verified":"true"}}`},
		// Deep answers end at once, neither crashing nor hanging: refused
		// in a declared field (past the validator's depth bound), kept in
		// one the schema does not declare.
		{name: "deep declared field", answer: `{"action":"accept","content":{"name":` + strings.Repeat("[", 5_000) + strings.Repeat("]", 5_000) + `,"email":"a@b.c"}}`},
		{name: "deep undeclared field", answer: `{"action":"accept","content":{"name":"A","email":"a@b.c","x":` + strings.Repeat("[", 5_000) + strings.Repeat("]", 5_000) + `}}`, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				errs := featureTool(h, func(ctx context.Context) (string, error) {
					_, err := server.Elicit(ctx, &server.ElicitParams{Message: "m", RequestedSchema: signupForm()})
					return "done", err
				})
				h.start()
				h.Initialize(protocol.Version20251125, map[string]any{"elicitation": map[string]any{}})
				h.SendCallTool(2, "feature", `{}`)
				answer(h, clientRequest(t, h, "elicitation/create"), tc.answer)
				err := <-errs
				if tc.ok {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, server.ErrInvalidResult)
				}
				h.RecvResult(2)
				finish(t, h)
			})
		})
	}
}

func TestCreateMessageRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		got := make(chan *server.CreateMessageResult, 1)
		errs := featureTool(h, func(ctx context.Context) (string, error) {
			res, err := server.CreateMessage(ctx, &server.CreateMessageParams{
				Messages: []server.SamplingMessage{
					{Role: server.RoleUser, Content: []server.Content{&server.TextContent{Text: "What is 2+2?"}}},
					{Role: server.RoleAssistant, Content: []server.Content{&server.TextContent{Text: "Let me think."}}},
					{Role: server.RoleUser, Content: []server.Content{&server.TextContent{Text: "Go on."}, &server.ImageContent{Data: []byte("png"), MIMEType: "image/png"}}},
				},
				SystemPrompt:  "Be brief.",
				MaxTokens:     100,
				Temperature:   new(0.2),
				StopSequences: []string{"\n\n"},
				ModelPreferences: &server.ModelPreferences{
					Hints: []server.ModelHint{{Name: "claude"}}, IntelligencePriority: new(0.8), CostPriority: new(0.0),
				},
				IncludeContext: "none",
				Metadata:       map[string]any{"k": "v"},
			})
			got <- res
			if err != nil {
				return "", err
			}
			return res.Content[0].(*server.TextContent).Text, nil
		})
		h.start()
		h.Initialize(protocol.Version20251125, map[string]any{"sampling": map[string]any{}})
		h.SendCallTool(2, "feature", `{}`)
		out := clientRequest(t, h, "sampling/createMessage")
		assert.JSONEq(t, `{"messages":[
			{"role":"user","content":{"type":"text","text":"What is 2+2?"}},
			{"role":"assistant","content":{"type":"text","text":"Let me think."}},
			{"role":"user","content":[{"type":"text","text":"Go on."},{"type":"image","data":"cG5n","mimeType":"image/png"}]}],
			"systemPrompt":"Be brief.","maxTokens":100,"temperature":0.2,"stopSequences":["\n\n"],
			"modelPreferences":{"hints":[{"name":"claude"}],"costPriority":0,"intelligencePriority":0.8},
			"includeContext":"none","metadata":{"k":"v"}}`, string(out.Params))
		answer(h, out, `{"role":"assistant","content":{"type":"text","text":"4"},"model":"test-model","stopReason":"endTurn","_meta":{"m":1}}`)
		require.NoError(t, <-errs)
		res := <-got
		assert.Equal(t, &server.CreateMessageResult{
			Role: "assistant", Content: []server.Content{&server.TextContent{Text: "4"}}, Model: "test-model",
			StopReason: server.StopEndTurn, Meta: server.Meta{"m": float64(1)},
		}, res)
		text, _ := toolText(t, h.RecvResult(2))
		assert.Equal(t, "4", text)
		finish(t, h)
	})
}

func TestCreateMessageWithTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		got := make(chan *server.CreateMessageResult, 1)
		errs := featureTool(h, func(ctx context.Context) (string, error) {
			res, err := server.CreateMessage(ctx, &server.CreateMessageParams{
				Messages: []server.SamplingMessage{
					{Role: server.RoleUser, Content: []server.Content{&server.TextContent{Text: "Weather in Paris?"}}},
					{Role: server.RoleAssistant, Content: []server.Content{&server.ToolUseContent{ID: "u1", Name: "weather", Input: json.RawMessage(`{"city":"Paris"}`)}}},
					{Role: server.RoleUser, Content: []server.Content{&server.ToolResultContent{ToolUseID: "u1", Content: []server.Content{&server.TextContent{Text: "18C"}}, StructuredContent: map[string]any{"c": 18}}}},
				},
				MaxTokens:  50,
				Tools:      []server.Tool{{Name: "weather", Description: "Weather by city"}},
				ToolChoice: &server.ToolChoice{Mode: "auto"},
			})
			got <- res
			return "sampled", err
		})
		h.start()
		h.Initialize(protocol.Version20251125, map[string]any{"sampling": map[string]any{"tools": map[string]any{}}})
		h.SendCallTool(2, "feature", `{}`)
		out := clientRequest(t, h, "sampling/createMessage")
		assert.JSONEq(t, `{"messages":[
			{"role":"user","content":{"type":"text","text":"Weather in Paris?"}},
			{"role":"assistant","content":{"type":"tool_use","id":"u1","name":"weather","input":{"city":"Paris"}}},
			{"role":"user","content":{"type":"tool_result","toolUseId":"u1","content":[{"type":"text","text":"18C"}],"structuredContent":{"c":18}}}],
			"maxTokens":50,
			"tools":[{"name":"weather","description":"Weather by city","inputSchema":{"type":"object"}}],
			"toolChoice":{"mode":"auto"}}`, string(out.Params))
		answer(h, out, `{"role":"assistant","model":"m","stopReason":"toolUse","content":[
			{"type":"text","text":"Checking."},
			{"type":"tool_use","id":"u2","name":"weather","input":{"city":"Rome"}},
			{"type":"tool_result","toolUseId":"u0","content":[{"type":"text","text":"x"}],"isError":true}]}`)
		require.NoError(t, <-errs)
		res := <-got
		require.Len(t, res.Content, 3)
		assert.Equal(t, &server.TextContent{Text: "Checking."}, res.Content[0])
		assert.Equal(t, &server.ToolUseContent{ID: "u2", Name: "weather", Input: json.RawMessage(`{"city":"Rome"}`)}, res.Content[1])
		assert.Equal(t, &server.ToolResultContent{ToolUseID: "u0", Content: []server.Content{&server.TextContent{Text: "x"}}, IsError: true}, res.Content[2])
		assert.Equal(t, server.StopToolUse, res.StopReason)
		h.RecvResult(2)
		finish(t, h)
	})
}

// Sampling that the client's capabilities do not allow, or that is
// malformed, is refused before anything is sent.
func TestCreateMessageRefused(t *testing.T) {
	text := func(s string) []server.Content { return []server.Content{&server.TextContent{Text: s}} }
	hello := []server.SamplingMessage{{Role: server.RoleUser, Content: text("hi")}}
	for _, tc := range []struct {
		name   string
		caps   map[string]any
		params *server.CreateMessageParams
		capErr bool
	}{
		{name: "no sampling", caps: map[string]any{}, params: &server.CreateMessageParams{Messages: hello, MaxTokens: 1}, capErr: true},
		{name: "tools without sampling.tools", caps: map[string]any{"sampling": map[string]any{}}, params: &server.CreateMessageParams{Messages: hello, MaxTokens: 1, Tools: []server.Tool{{Name: "t"}}}, capErr: true},
		{name: "toolChoice without sampling.tools", caps: map[string]any{"sampling": map[string]any{}}, params: &server.CreateMessageParams{Messages: hello, MaxTokens: 1, ToolChoice: &server.ToolChoice{Mode: "none"}}, capErr: true},
		{
			name: "tool results without sampling.tools", caps: map[string]any{"sampling": map[string]any{}},
			params: &server.CreateMessageParams{MaxTokens: 1, Messages: []server.SamplingMessage{{Role: server.RoleUser, Content: []server.Content{&server.ToolResultContent{ToolUseID: "u"}}}}},
			capErr: true,
		},
		{name: "includeContext without sampling.context", caps: map[string]any{"sampling": map[string]any{}}, params: &server.CreateMessageParams{Messages: hello, MaxTokens: 1, IncludeContext: "thisServer"}, capErr: true},
		{name: "no messages", caps: map[string]any{"sampling": map[string]any{}}, params: &server.CreateMessageParams{MaxTokens: 1}},
		{name: "nil params", caps: map[string]any{"sampling": map[string]any{}}, params: nil},
		{name: "no maxTokens", caps: map[string]any{"sampling": map[string]any{}}, params: &server.CreateMessageParams{Messages: hello}},
		{name: "bad role", caps: map[string]any{"sampling": map[string]any{}}, params: &server.CreateMessageParams{Messages: []server.SamplingMessage{{Role: "system", Content: text("x")}}, MaxTokens: 1}},
		{name: "empty content", caps: map[string]any{"sampling": map[string]any{}}, params: &server.CreateMessageParams{Messages: []server.SamplingMessage{{Role: server.RoleUser}}, MaxTokens: 1}},
		{
			name: "tool results mixed with text", caps: map[string]any{"sampling": map[string]any{"tools": map[string]any{}}},
			params: &server.CreateMessageParams{MaxTokens: 1, Messages: []server.SamplingMessage{{Role: server.RoleUser, Content: []server.Content{&server.ToolResultContent{ToolUseID: "u"}, &server.TextContent{Text: "and"}}}}},
		},
		{
			name: "tool use from the user", caps: map[string]any{"sampling": map[string]any{"tools": map[string]any{}}},
			params: &server.CreateMessageParams{MaxTokens: 1, Messages: []server.SamplingMessage{{Role: server.RoleUser, Content: []server.Content{&server.ToolUseContent{ID: "u", Name: "t"}}}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				errs := featureTool(h, func(ctx context.Context) (string, error) {
					_, err := server.CreateMessage(ctx, tc.params)
					return "", err
				})
				h.start()
				h.Initialize(protocol.Version20251125, tc.caps)
				h.SendCallTool(2, "feature", `{}`)
				err := <-errs
				if tc.capErr {
					require.ErrorIs(t, err, server.ErrCapability)
				} else {
					require.Error(t, err)
					require.NotErrorIs(t, err, server.ErrCapability)
				}
				h.RecvResult(2) // nothing was sent to the client
				finish(t, h)
			})
		})
	}
}

func TestCreateMessageMalformedAnswer(t *testing.T) {
	for _, tc := range []struct{ name, answer string }{
		{name: "no content", answer: `{"role":"assistant","model":"m"}`},
		{name: "empty content array", answer: `{"role":"assistant","model":"m","content":[]}`},
		{name: "unknown content type", answer: `{"role":"assistant","model":"m","content":{"type":"hologram"}}`},
		{name: "tool use without input", answer: `{"role":"assistant","model":"m","content":{"type":"tool_use","id":"u","name":"t"}}`},
		{name: "no model", answer: `{"role":"assistant","content":{"type":"text","text":"x"}}`},
		{name: "not an object", answer: `"text"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				errs := featureTool(h, func(ctx context.Context) (string, error) {
					_, err := server.CreateMessage(ctx, &server.CreateMessageParams{
						Messages: []server.SamplingMessage{{Role: server.RoleUser, Content: []server.Content{&server.TextContent{Text: "hi"}}}}, MaxTokens: 5,
					})
					return "", err
				})
				h.start()
				h.Initialize(protocol.Version20251125, map[string]any{"sampling": map[string]any{}})
				h.SendCallTool(2, "feature", `{}`)
				answer(h, clientRequest(t, h, "sampling/createMessage"), tc.answer)
				require.ErrorIs(t, <-errs, server.ErrInvalidResult)
				h.RecvResult(2)
				finish(t, h)
			})
		})
	}
}

func TestListRoots(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         []server.Root
		wantErr      error
	}{
		{name: "roots", answer: `{"roots":[{"uri":"file:///src","name":"src"},{"uri":"file:///tmp"}]}`, want: []server.Root{{URI: "file:///src", Name: "src"}, {URI: "file:///tmp"}}},
		{name: "none", answer: `{"roots":[]}`, want: []server.Root{}},
		{name: "malformed", answer: `{"roots":"file:///"}`, wantErr: server.ErrInvalidResult},
		{name: "missing", answer: `{}`, wantErr: server.ErrInvalidResult},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				got := make(chan []server.Root, 1)
				errs := featureTool(h, func(ctx context.Context) (string, error) {
					roots, err := server.ListRoots(ctx)
					got <- roots
					return "listed", err
				})
				h.start()
				h.Initialize(protocol.Version20251125, map[string]any{"roots": map[string]any{"listChanged": true}})
				h.SendCallTool(2, "feature", `{}`)
				out := clientRequest(t, h, "roots/list")
				assert.Equal(t, "{}", string(out.Params), "params {}, as every request sends")
				answer(h, out, tc.answer)
				if tc.wantErr != nil {
					require.ErrorIs(t, <-errs, tc.wantErr)
				} else {
					require.NoError(t, <-errs)
				}
				assert.Equal(t, tc.want, <-got)
				h.RecvResult(2)
				finish(t, h)
			})
		})
	}
}

func TestClientCallsOutsideAHandler(t *testing.T) {
	ctx := context.Background()
	_, err := server.ListRoots(ctx)
	require.ErrorIs(t, err, server.ErrNoRequest)
	_, err = server.Elicit(ctx, &server.ElicitParams{Message: "m", RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)})
	require.ErrorIs(t, err, server.ErrNoRequest)
	_, err = server.CreateMessage(ctx, &server.CreateMessageParams{})
	require.ErrorIs(t, err, server.ErrNoRequest)
}

// In a 2026-07-28 request the calls become input requests, and a missing
// capability is the -32021 error.
func TestClientCallsStateless(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("ask", func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
			var in struct{ Mode string }
			_ = json.Unmarshal(req.Arguments, &in)
			p := &server.ElicitParams{Message: "Name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}
			if in.Mode == server.ElicitModeURL {
				p = &server.ElicitParams{Mode: server.ElicitModeURL, Message: "Log in", URL: "https://example.com"}
			}
			res, err := server.Elicit(ctx, p)
			if err != nil {
				return nil, err
			}
			return server.Text(fmt.Sprint(res.Content["name"])), nil
		})
		h.start()
		caps := map[string]any{"elicitation": map[string]any{}}
		h.Request(1, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}, "_meta": statelessMeta(caps, nil)})
		var r struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		}
		require.NoError(t, json.Unmarshal(h.RecvResult(1), &r))
		require.Equal(t, "input_required", r.ResultType)
		require.Len(t, r.InputRequests, 1)
		for key, ask := range r.InputRequests {
			assert.JSONEq(t, `{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}`, string(ask))
			h.Request(2, "tools/call", map[string]any{
				"name": "ask", "arguments": map[string]any{}, "_meta": statelessMeta(caps, nil), "requestState": r.RequestState,
				"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
			})
		}
		text, _ := toolText(t, h.RecvResult(2))
		assert.Equal(t, "Ada", text)

		// URL mode without the url capability: -32021, naming it.
		h.Request(3, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{"mode": "url"}, "_meta": statelessMeta(caps, nil)})
		resp := h.RecvResponse()
		require.NotNil(t, resp.Error)
		assert.Equal(t, int64(protocol.CodeMissingRequiredClientCapability), resp.Error.Code)
		assert.JSONEq(t, `{"requiredCapabilities":{"elicitation":{"url":{}}}}`, string(resp.Error.Data))

		// A form without elicitation at all: {} is what form mode needs.
		h.Request(4, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}, "_meta": statelessMeta(nil, nil)})
		resp = h.RecvResponse()
		require.NotNil(t, resp.Error)
		assert.Equal(t, int64(protocol.CodeMissingRequiredClientCapability), resp.Error.Code)
		assert.JSONEq(t, `{"requiredCapabilities":{"elicitation":{}}}`, string(resp.Error.Data))
		finish(t, h)
	})
}
