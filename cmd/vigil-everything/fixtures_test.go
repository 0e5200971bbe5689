package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The fixture server's exact outputs, in a 2025-11-25 session and in
// 2026-07-28 stateless requests.

// textResult is a tool result holding one text item.
func textResult(text string) string {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
	return string(b)
}

// errorResult is a tool error holding one text item.
func errorResult(text string) string {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": true})
	return string(b)
}

// toolDefinitions are some of the tools as tools/list shows them, exactly.
var toolDefinitions = map[string]string{
	"test_simple_text": `{"name":"test_simple_text","description":"Tests simple text content response","inputSchema":{"type":"object","additionalProperties":false}}`,
	"test_sampling": `{"name":"test_sampling","description":"Tests server-initiated sampling (LLM completion request)",` +
		`"inputSchema":{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"],"additionalProperties":false}}`,
	"test_elicitation": `{"name":"test_elicitation","description":"Tests server-initiated elicitation (user input request)",` +
		`"inputSchema":{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"],"additionalProperties":false}}`,
	"json_schema_2020_12_tool": `{"name":"json_schema_2020_12_tool","description":"Tool with JSON Schema 2020-12 features","inputSchema":` + jsonSchema202012 + `}`,
	"vigil_structured": `{"name":"vigil_structured","description":"Adds and multiplies two integers; the result is structured content (with an output schema).",` +
		`"inputSchema":{"type":"object","properties":{"a":{"type":"integer","description":"the first operand"},"b":{"type":"integer","description":"the second operand"}},"required":["a","b"],"additionalProperties":false},` +
		`"outputSchema":{"type":"object","properties":{"sum":{"type":"integer"},"product":{"type":"integer"}},"required":["sum","product"],"additionalProperties":false}}`,
	"vigil_region": `{"name":"vigil_region","description":"Returns its region argument, which HTTP clients mirror into the Mcp-Param-Region header.",` +
		`"inputSchema":{"type":"object","properties":{"region":{"type":"string","description":"a region name, mirrored into the Mcp-Param-Region header","x-mcp-header":"Region"}},"required":["region"]}}`,
}

// conformanceTools are the tools the conformance suite calls by name.
func conformanceTools() []string {
	return []string{
		"json_schema_2020_12_tool", "test_audio_content", "test_elicitation", "test_elicitation_sep1034_defaults",
		"test_elicitation_sep1330_enums", "test_embedded_resource", "test_error_handling", "test_image_content",
		"test_input_required_result_capabilities", "test_input_required_result_elicitation",
		"test_input_required_result_list_roots", "test_input_required_result_multi_round",
		"test_input_required_result_multiple_inputs", "test_input_required_result_request_state",
		"test_input_required_result_sampling", "test_input_required_result_tampered_state", "test_logging_tool",
		"test_missing_capability", "test_multiple_content_types", "test_sampling", "test_simple_text",
		"test_streaming_elicitation", "test_tool_with_logging", "test_tool_with_progress", "test_trigger_prompt_change",
		"test_trigger_tool_change",
	}
}

type listedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Every tool is listed with a valid name and a description, in the same
// order each time; the conformance tools are all there; and the first tool
// succeeds with {} (a conformance probe calls it so).
func TestToolsList(t *testing.T) {
	for _, e := range eras() {
		t.Run(e.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := startFixtures(t, e, nil)
				var first []string
				byName := map[string]json.RawMessage{}
				for i := range 3 {
					raw := c.call("tools/list", nil)
					var res struct {
						Tools      []json.RawMessage `json:"tools"`
						ResultType string            `json:"resultType"`
						NextCursor string            `json:"nextCursor"`
					}
					require.NoError(t, json.Unmarshal(raw, &res))
					assert.Empty(t, res.NextCursor)
					if e.stateless {
						assert.Equal(t, "complete", res.ResultType, "tools/list is never input_required")
					}
					var names []string
					for _, rawTool := range res.Tools {
						var tool listedTool
						require.NoError(t, json.Unmarshal(rawTool, &tool))
						assert.True(t, vocab.ValidToolName(tool.Name), tool.Name)
						assert.NotEmpty(t, tool.Description, tool.Name)
						assert.NotEmpty(t, tool.InputSchema, tool.Name)
						names = append(names, tool.Name)
						byName[tool.Name] = rawTool
					}
					if i == 0 {
						first = names
					} else {
						assert.Equal(t, first, names, "tools/list order must not change")
					}
				}
				assert.Subset(t, first, conformanceTools())
				for name, def := range toolDefinitions {
					assert.JSONEq(t, def, string(byName[name]), name)
				}

				require.Contains(t, first, "about")
				assert.JSONEq(t, c.want("tools/call", textResult("vigil-everything dev: the Vigil MCP conformance fixture server")),
					string(c.callTool("about", map[string]any{})))
				c.stop()
			})
		})
	}
}

// The tools that answer at once, without notifications or questions.
func TestToolResults(t *testing.T) {
	tests := []struct {
		name string
		tool string
		args map[string]any // nil: no arguments key
		want string         // the 2025 result
	}{
		{name: "simple text without arguments", tool: "test_simple_text", want: textResult("This is a simple text response for testing.")},
		{name: "simple text", tool: "test_simple_text", args: map[string]any{}, want: textResult("This is a simple text response for testing.")},
		{
			name: "image", tool: "test_image_content", args: map[string]any{},
			want: `{"content":[{"type":"image","data":"` + testImageBase64 + `","mimeType":"image/png"}]}`,
		},
		{
			name: "audio", tool: "test_audio_content", args: map[string]any{},
			want: `{"content":[{"type":"audio","data":"` + testAudioBase64 + `","mimeType":"audio/wav"}]}`,
		},
		{
			name: "embedded resource", tool: "test_embedded_resource", args: map[string]any{},
			want: `{"content":[{"type":"resource","resource":{"uri":"test://embedded-resource","mimeType":"text/plain","text":"This is an embedded resource content."}}]}`,
		},
		{
			name: "multiple content types", tool: "test_multiple_content_types", args: map[string]any{},
			want: `{"content":[{"type":"text","text":"Multiple content types test:"},` +
				`{"type":"image","data":"` + testImageBase64 + `","mimeType":"image/png"},` +
				`{"type":"resource","resource":{"uri":"test://mixed-content-resource","mimeType":"application/json","text":"{\"test\":\"data\",\"value\":123}"}}]}`,
		},
		{name: "error", tool: "test_error_handling", args: map[string]any{}, want: errorResult("This tool intentionally returns an error for testing")},
		{name: "progress without a token", tool: "test_tool_with_progress", args: map[string]any{}, want: textResult("0")},
		{
			name: "json schema 2020-12", tool: "json_schema_2020_12_tool",
			args: map[string]any{"name": "Ada", "contactMethod": "email", "email": "ada@example.com"},
			want: textResult(`JSON Schema 2020-12 tool called with: {"contactMethod":"email","email":"ada@example.com","name":"Ada"}`),
		},
		{name: "dynamic tool", tool: dynamicTool, args: map[string]any{}, want: textResult("This is the dynamic tool.")},
		{
			name: "structured", tool: "vigil_structured", args: map[string]any{"a": 2, "b": 3},
			want: `{"content":[{"type":"text","text":"{\"sum\":5,\"product\":6}"}],"structuredContent":{"sum":5,"product":6}}`,
		},
		{
			name: "validation failure", tool: "vigil_structured", args: map[string]any{"a": "two", "b": 3},
			want: errorResult(`invalid arguments for tool "vigil_structured": /a: type: "two" has type "string", want "integer"`),
		},
		{
			name: "unexpected argument", tool: "test_simple_text", args: map[string]any{"x": 1},
			want: errorResult(`invalid arguments for tool "test_simple_text": additionalProperties: unexpected property "x"`),
		},
		{name: "region", tool: "vigil_region", args: map[string]any{"region": "eu-west"}, want: textResult("Region: eu-west")},
		{name: "region missing", tool: "vigil_region", args: map[string]any{}, want: errorResult(`invalid arguments for tool "vigil_region": required: missing property "region"`)},
	}
	for _, e := range eras() {
		for _, tc := range tests {
			t.Run(e.name+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					c := startFixtures(t, e, nil)
					assert.JSONEq(t, c.want("tools/call", tc.want), string(c.callTool(tc.tool, tc.args)))
					c.stop()
				})
			})
		}
	}
}

// logMessage is the params of a notifications/message from Logger.
func logMessage(level, msg string) string {
	return fmt.Sprintf(`{"level":%q,"data":{"message":%q}}`, level, msg)
}

// readLogs reads n notifications/message and returns their params, and
// when each arrived.
func readLogs(c *fixtureClient, n int) ([]string, []time.Time) {
	c.t.Helper()
	var params []string
	var at []time.Time
	for range n {
		m := c.notification()
		require.Equal(c.t, "notifications/message", m.Method)
		params = append(params, string(m.Params))
		at = append(at, time.Now())
	}
	return params, at
}

func assertJSONList(t *testing.T, want, got []string) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		assert.JSONEq(t, want[i], got[i], "item %d", i)
	}
}

func TestLoggingSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startFixtures(t, era{name: "2025-11-25"}, nil)
		// Before logging/setLevel, info and above reach the client.
		id := c.send("tools/call", map[string]any{"name": "test_tool_with_logging", "arguments": map[string]any{}})
		logs, at := readLogs(c, 3)
		assertJSONList(t, []string{
			logMessage("info", "Tool execution started"),
			logMessage("info", "Tool processing data"),
			logMessage("info", "Tool execution completed"),
		}, logs)
		assert.Equal(t, []time.Duration{stepDelay, stepDelay}, []time.Duration{at[1].Sub(at[0]), at[2].Sub(at[1])})
		assert.JSONEq(t, textResult("Tool with logging executed successfully"), string(c.result(id)))

		assert.JSONEq(t, `{}`, string(c.call("logging/setLevel", map[string]any{"level": "warning"})))
		id = c.send("tools/call", map[string]any{"name": "vigil_log_levels"})
		logs, _ = readLogs(c, 2)
		assertJSONList(t, []string{logMessage("warning", "a warning message"), logMessage("error", "an error message")}, logs)
		assert.JSONEq(t, textResult("Logged at debug, info, notice, warning and error"), string(c.result(id)))
		// Below the level nothing is sent: the result comes first.
		assert.JSONEq(t, textResult("Tool with logging executed successfully"), string(c.callTool("test_tool_with_logging", nil)))

		assert.JSONEq(t, `{}`, string(c.call("logging/setLevel", map[string]any{"level": "debug"})))
		id = c.send("tools/call", map[string]any{"name": "vigil_log_levels"})
		logs, _ = readLogs(c, 5)
		assertJSONList(t, []string{
			logMessage("debug", "a debug message"), logMessage("info", "an info message"), logMessage("notice", "a notice message"),
			logMessage("warning", "a warning message"), logMessage("error", "an error message"),
		}, logs)
		c.result(id)
		c.stop()
	})
}

func TestLoggingStateless(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startFixtures(t, era{name: "2026-07-28", stateless: true}, nil)
		// Without a log level in _meta nothing is logged.
		for _, tool := range []string{"test_tool_with_logging", "test_logging_tool", "vigil_log_levels"} {
			c.callTool(tool, nil)
		}
		assert.JSONEq(t, c.want("tools/call", textResult("Logged one info message")), string(c.callTool("test_logging_tool", nil)))

		c.logLevel = "info"
		id := c.send("tools/call", map[string]any{"name": "test_tool_with_logging"})
		logs, at := readLogs(c, 3)
		assertJSONList(t, []string{
			logMessage("info", "Tool execution started"),
			logMessage("info", "Tool processing data"),
			logMessage("info", "Tool execution completed"),
		}, logs)
		assert.Equal(t, stepDelay, at[2].Sub(at[1]))
		assert.JSONEq(t, c.want("tools/call", textResult("Tool with logging executed successfully")), string(c.result(id)))

		id = c.send("tools/call", map[string]any{"name": "test_logging_tool"})
		logs, _ = readLogs(c, 1)
		assertJSONList(t, []string{logMessage("info", "test_logging_tool ran")}, logs)
		c.result(id)

		c.logLevel = "notice"
		id = c.send("tools/call", map[string]any{"name": "vigil_log_levels"})
		logs, _ = readLogs(c, 3)
		assertJSONList(t, []string{
			logMessage("notice", "a notice message"), logMessage("warning", "a warning message"), logMessage("error", "an error message"),
		}, logs)
		c.result(id)
		c.stop()
	})
}

func TestProgress(t *testing.T) {
	for _, e := range eras() {
		for _, token := range []any{"progress-test-1", 42} {
			t.Run(fmt.Sprintf("%s/%v", e.name, token), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					c := startFixtures(t, e, nil)
					tok, err := json.Marshal(token)
					require.NoError(t, err)
					id := c.send("tools/call", map[string]any{
						"name": "test_tool_with_progress", "arguments": map[string]any{},
						"_meta": map[string]any{"progressToken": token},
					})
					var at []time.Time
					for _, p := range []int{0, 50, 100} {
						n := c.notification()
						at = append(at, time.Now())
						require.Equal(t, "notifications/progress", n.Method)
						assert.JSONEq(t, fmt.Sprintf(`{"progressToken":%s,"progress":%d,"total":100,"message":"Completed step %d of 100"}`, tok, p, p), string(n.Params))
					}
					assert.Equal(t, []time.Duration{stepDelay, stepDelay}, []time.Duration{at[1].Sub(at[0]), at[2].Sub(at[1])})
					assert.JSONEq(t, c.want("tools/call", textResult(fmt.Sprint(token))), string(c.result(id)))
					c.stop()
				})
			})
		}
	}
}

// The sampling, elicitation and roots tools send real requests in a 2025
// session; in 2026-07-28 the same question comes back in an input_required
// result, under a key derived from the method, and the retry completes.
func TestClientRequests(t *testing.T) {
	tests := []struct {
		name       string
		tool       string
		args       map[string]any
		method     string
		wantParams string
		answer     string
		want       string
	}{
		{
			name: "sampling", tool: "test_sampling", args: map[string]any{"prompt": "Test prompt for sampling"},
			method:     "sampling/createMessage",
			wantParams: `{"messages":[{"role":"user","content":{"type":"text","text":"Test prompt for sampling"}}],"maxTokens":100}`,
			answer:     `{"role":"assistant","content":{"type":"text","text":"This is a test response from the client"},"model":"test-model","stopReason":"endTurn"}`,
			want:       textResult("LLM response: This is a test response from the client"),
		},
		{
			name: "elicitation", tool: "test_elicitation", args: map[string]any{"message": "Please provide your information"},
			method: "elicitation/create",
			wantParams: `{"message":"Please provide your information","requestedSchema":{"type":"object","properties":{` +
				`"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}}`,
			answer: `{"action":"accept","content":{"username":"testuser","email":"test@example.com"}}`,
			want:   textResult(`User response: action=accept, content={"email":"test@example.com","username":"testuser"}`),
		},
		{
			name: "elicitation declined", tool: "test_elicitation", args: map[string]any{"message": "Who?"},
			method: "elicitation/create",
			wantParams: `{"message":"Who?","requestedSchema":{"type":"object","properties":{` +
				`"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}}`,
			answer: `{"action":"decline"}`,
			want:   textResult(`User response: action=decline, content={}`),
		},
		{
			name: "sep1034 defaults", tool: "test_elicitation_sep1034_defaults", args: map[string]any{},
			method: "elicitation/create",
			wantParams: `{"message":"Please review and update the form fields with defaults","requestedSchema":{"type":"object","properties":{` +
				`"name":{"type":"string","description":"User name","default":"John Doe"},` +
				`"age":{"type":"integer","description":"User age","default":30},` +
				`"score":{"type":"number","description":"User score","default":95.5},` +
				`"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},` +
				`"verified":{"type":"boolean","description":"Verification status","default":true}}}}`,
			answer: `{"action":"accept","content":{"name":"Jane Smith","age":25,"score":88,"status":"inactive","verified":false}}`,
			want:   textResult(`Elicitation completed: action=accept, content={"age":25,"name":"Jane Smith","score":88,"status":"inactive","verified":false}`),
		},
		{
			name: "sep1330 enums", tool: "test_elicitation_sep1330_enums", args: map[string]any{},
			method: "elicitation/create",
			wantParams: `{"message":"Please select options from the enum fields","requestedSchema":{"type":"object","properties":{` +
				`"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},` +
				`"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[` +
				`{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},` +
				`"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},` +
				`"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},` +
				`"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[` +
				`{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}}`,
			answer: `{"action":"accept","content":{"untitledSingle":"option1","titledSingle":"value1","legacyEnum":"opt1","untitledMulti":["option1","option2"],"titledMulti":["value1","value2"]}}`,
			want: textResult(`Elicitation completed: action=accept, content=` +
				`{"legacyEnum":"opt1","titledMulti":["value1","value2"],"titledSingle":"value1","untitledMulti":["option1","option2"],"untitledSingle":"option1"}`),
		},
		{
			name: "roots", tool: "vigil_roots", args: map[string]any{},
			method: "roots/list", wantParams: `{}`,
			answer: `{"roots":[{"uri":"file:///test/root","name":"Test Root"}]}`,
			want: `{"content":[{"type":"text","text":"{\"roots\":[{\"uri\":\"file:///test/root\",\"name\":\"Test Root\"}]}"}],` +
				`"structuredContent":{"roots":[{"uri":"file:///test/root","name":"Test Root"}]}}`,
		},
	}
	for _, e := range eras() {
		for _, tc := range tests {
			t.Run(e.name+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					c := startFixtures(t, e, nil)
					if e.stateless {
						key := strings.ReplaceAll(tc.method, "/", "-") + "-0"
						ask := `{"method":"` + tc.method + `"}`
						if tc.wantParams != "" {
							ask = `{"method":"` + tc.method + `","params":` + tc.wantParams + `}`
						}
						r1 := asInputRequired(t, c.callTool(tc.tool, tc.args))
						assertInputRequests(t, map[string]string{key: ask}, r1.InputRequests)
						got := c.call("tools/call", map[string]any{
							"name": tc.tool, "arguments": tc.args, "requestState": r1.RequestState,
							"inputResponses": answers(map[string]string{key: tc.answer}),
						})
						assert.JSONEq(t, c.want("tools/call", tc.want), string(got))
						c.stop()
						return
					}
					id := c.send("tools/call", map[string]any{"name": tc.tool, "arguments": tc.args})
					r := c.serverRequest(tc.method)
					if tc.wantParams == "" {
						assert.Empty(t, r.Params)
					} else {
						assert.JSONEq(t, tc.wantParams, string(r.Params))
					}
					c.reply(r, tc.answer)
					assert.JSONEq(t, tc.want, string(c.result(id)))
					c.stop()
				})
			})
		}
	}
}

// The elicitation and sampling answers of the conformance suite.
const (
	answerAlice   = `{"action":"accept","content":{"name":"Alice"}}`
	answerOK      = `{"action":"accept","content":{"ok":true}}`
	answerParis   = `{"role":"assistant","content":{"type":"text","text":"The capital of France is Paris."},"model":"test-model","stopReason":"endTurn"}`
	answerGreet   = `{"role":"assistant","content":{"type":"text","text":"Hello there!"},"model":"test-model","stopReason":"endTurn"}`
	answerRoots   = `{"roots":[{"uri":"file:///test/root","name":"Test Root"}]}`
	askName       = `{"method":"elicitation/create","params":{"message":"What is your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}`
	askConfirm    = `{"method":"elicitation/create","params":{"message":"Please confirm","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}`
	askCapital    = `{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"What is the capital of France?"}}],"maxTokens":100}}`
	askGreeting   = `{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Generate a greeting"}}],"maxTokens":50}}`
	askRoots      = `{"method":"roots/list","params":{}}`
	askStep1      = `{"method":"elicitation/create","params":{"message":"Step 1: What is your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}`
	askStep2      = `{"method":"elicitation/create","params":{"message":"Step 2: What is your favorite color?","requestedSchema":{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}}}`
	askContext    = `{"method":"elicitation/create","params":{"message":"What context should the prompt use?","requestedSchema":{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}}}`
	askUserInput  = `{"method":"elicitation/create","params":{"message":"Please enter a value","requestedSchema":{"type":"object","properties":{"value":{"type":"string"}},"required":["value"]}}}`
	askSayHello   = `{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Say hello"}}],"maxTokens":20}}`
	answerSampled = `{"role":"assistant","content":{"type":"text","text":"Hi"},"model":"test-model","stopReason":"endTurn"}`
)

// assertInputRequests requires exactly the input requests want (key to
// request JSON).
func assertInputRequests(t *testing.T, want map[string]string, got map[string]json.RawMessage) {
	t.Helper()
	require.Len(t, got, len(want), "input requests: %v", got)
	for k, v := range want {
		require.Contains(t, got, k)
		assert.JSONEq(t, v, string(got[k]), k)
	}
}

// answers builds inputResponses from raw JSON answers.
func answers(kv map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range kv {
		out[k] = json.RawMessage(v)
	}
	return out
}

// One round of questions, then the retry with the answers and the
// requestState completes, in 2026-07-28.
func TestInputRequiredStateless(t *testing.T) {
	tests := []struct {
		name    string
		tool    string
		asks    map[string]string // key: the input request
		answers map[string]string // key: the answer
		want    string            // the final result, 2025 shape
	}{
		{
			name: "elicitation", tool: "test_input_required_result_elicitation",
			asks: map[string]string{"user_name": askName}, answers: map[string]string{"user_name": answerAlice},
			want: textResult("Hello, Alice!"),
		},
		{
			name: "sampling", tool: "test_input_required_result_sampling",
			asks: map[string]string{"capital_question": askCapital}, answers: map[string]string{"capital_question": answerParis},
			want: textResult("Sampling result: The capital of France is Paris."),
		},
		{
			name: "list roots", tool: "test_input_required_result_list_roots",
			asks: map[string]string{"client_roots": askRoots}, answers: map[string]string{"client_roots": answerRoots},
			want: textResult("Found 1 root(s): file:///test/root"),
		},
		{
			name: "request state", tool: "test_input_required_result_request_state",
			asks: map[string]string{"confirm": askConfirm}, answers: map[string]string{"confirm": answerOK},
			want: textResult("state-ok: requestState validated; ok=true"),
		},
		{
			name: "tampered state, untampered", tool: "test_input_required_result_tampered_state",
			asks: map[string]string{"confirm": askConfirm}, answers: map[string]string{"confirm": answerOK},
			want: textResult("state-ok: requestState integrity verified; ok=true"),
		},
		{
			name: "multiple inputs", tool: "test_input_required_result_multiple_inputs",
			asks:    map[string]string{"user_name": askName, "greeting": askGreeting, "client_roots": askRoots},
			answers: map[string]string{"user_name": answerAlice, "greeting": answerGreet, "client_roots": answerRoots},
			want:    textResult("Name: Alice; Greeting: Hello there!; Roots: 1"),
		},
		{
			name: "capabilities", tool: "test_input_required_result_capabilities",
			asks:    map[string]string{"user_name": askName, "capital_question": askCapital, "client_roots": askRoots},
			answers: map[string]string{"user_name": answerAlice, "capital_question": answerParis, "client_roots": answerRoots},
			want:    textResult("elicitation: Alice; sampling: The capital of France is Paris.; roots: 1"),
		},
		{
			name: "streaming elicitation", tool: "test_streaming_elicitation",
			asks:    map[string]string{"user_input": askUserInput},
			answers: map[string]string{"user_input": `{"action":"accept","content":{"value":"42"}}`},
			want:    textResult("Received: 42"),
		},
		{
			name: "missing capability, declared", tool: "test_missing_capability",
			asks: map[string]string{"sample": askSayHello}, answers: map[string]string{"sample": answerSampled},
			want: textResult("Sampling result: Hi"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := startFixtures(t, era{name: "2026-07-28", stateless: true}, nil)
				args := map[string]any{}
				r1 := asInputRequired(t, c.callTool(tc.tool, args))
				assertInputRequests(t, tc.asks, r1.InputRequests)

				got := c.call("tools/call", map[string]any{
					"name": tc.tool, "arguments": args, "inputResponses": answers(tc.answers), "requestState": r1.RequestState,
				})
				assert.JSONEq(t, c.want("tools/call", tc.want), string(got))
				c.stop()
			})
		})
	}
}

// The other input-required scenarios of the conformance suite.
func TestInputRequiredScenarios(t *testing.T) {
	stateless := era{name: "2026-07-28", stateless: true}
	elicitationTool := "test_input_required_result_elicitation"

	t.Run("multi round", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := startFixtures(t, stateless, nil)
			tool := "test_input_required_result_multi_round"
			r1 := asInputRequired(t, c.callTool(tool, map[string]any{}))
			assertInputRequests(t, map[string]string{"step1": askStep1}, r1.InputRequests)
			r2 := asInputRequired(t, c.call("tools/call", map[string]any{
				"name": tool, "arguments": map[string]any{}, "inputResponses": answers(map[string]string{"step1": answerAlice}), "requestState": r1.RequestState,
			}))
			assertInputRequests(t, map[string]string{"step2": askStep2}, r2.InputRequests)
			assert.NotEqual(t, r1.RequestState, r2.RequestState)
			got := c.call("tools/call", map[string]any{
				"name": tool, "arguments": map[string]any{}, "requestState": r2.RequestState,
				"inputResponses": answers(map[string]string{"step2": `{"action":"accept","content":{"color":"blue"}}`}),
			})
			assert.JSONEq(t, c.want("tools/call", textResult("Multi-round complete for Alice who likes blue")), string(got))
			c.stop()
		})
	})

	t.Run("tampered state", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := startFixtures(t, stateless, nil)
			tool := "test_input_required_result_tampered_state"
			r1 := asInputRequired(t, c.callTool(tool, map[string]any{}))
			e := c.rpcError(c.send("tools/call", map[string]any{
				"name": tool, "arguments": map[string]any{}, "inputResponses": answers(map[string]string{"confirm": answerOK}),
				"requestState": r1.RequestState + "-TAMPERED",
			}))
			assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code)
			c.stop()
		})
	})

	t.Run("capability check", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := startFixtures(t, stateless, map[string]any{"sampling": map[string]any{}})
			r1 := asInputRequired(t, c.callTool("test_input_required_result_capabilities", map[string]any{}))
			assertInputRequests(t, map[string]string{"capital_question": askCapital}, r1.InputRequests)
			c.stop()
		})
	})

	t.Run("no capability to ask with", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := startFixtures(t, stateless, map[string]any{})
			assert.JSONEq(t, c.want("tools/call", textResult("The client declared no elicitation, sampling or roots capability: nothing to ask")),
				string(c.callTool("test_input_required_result_capabilities", map[string]any{})))
			c.stop()
		})
	})

	t.Run("missing input response", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := startFixtures(t, stateless, nil)
			r := asInputRequired(t, c.call("tools/call", map[string]any{
				"name": elicitationTool, "arguments": map[string]any{},
				"inputResponses": answers(map[string]string{"wrong_key": `{"action":"accept","content":{"data":"wrong"}}`}),
			}))
			assertInputRequests(t, map[string]string{"user_name": askName}, r.InputRequests)
			c.stop()
		})
	})

	t.Run("ignore extra params", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := startFixtures(t, stateless, nil)
			got := c.call("tools/call", map[string]any{
				"name": elicitationTool, "arguments": map[string]any{},
				"inputResponses": answers(map[string]string{
					"user_name":          answerAlice,
					"unknown_extra_key":  `{"action":"accept","content":{"foo":"bar"}}`,
					"another_unexpected": `{"action":"accept","content":{"baz":123}}`,
				}),
			})
			assert.JSONEq(t, c.want("tools/call", textResult("Hello, Alice!")), string(got))
			c.stop()
		})
	})

	t.Run("validate input", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := startFixtures(t, stateless, nil)
			e := c.rpcError(c.send("tools/call", map[string]any{
				"name": elicitationTool, "arguments": map[string]any{}, "inputResponses": map[string]any{"user_name": 12345},
			}))
			assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code)
			r := asInputRequired(t, c.call("tools/call", map[string]any{
				"name": elicitationTool, "arguments": map[string]any{}, "inputResponses": nil,
			}))
			assertInputRequests(t, map[string]string{"user_name": askName}, r.InputRequests)
			c.stop()
		})
	})

	t.Run("declined", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := startFixtures(t, stateless, nil)
			got := c.call("tools/call", map[string]any{
				"name": elicitationTool, "arguments": map[string]any{},
				"inputResponses": answers(map[string]string{"user_name": `{"action":"decline"}`}),
			})
			assert.JSONEq(t, c.want("tools/call", errorResult("the user did not accept: action=decline")), string(got))
			c.stop()
		})
	})

	t.Run("prompt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := startFixtures(t, stateless, nil)
			prompt := "test_input_required_result_prompt"
			r1 := asInputRequired(t, c.call("prompts/get", map[string]any{"name": prompt}))
			assertInputRequests(t, map[string]string{"user_context": askContext}, r1.InputRequests)
			got := c.call("prompts/get", map[string]any{
				"name": prompt, "requestState": r1.RequestState,
				"inputResponses": answers(map[string]string{"user_context": `{"action":"accept","content":{"context":"test context"}}`}),
			})
			assert.JSONEq(t, c.want("prompts/get", `{"messages":[{"role":"user","content":{"type":"text","text":"Prompt with context: test context"}}]}`), string(got))

			declined := c.rpcError(c.send("prompts/get", map[string]any{
				"name": prompt, "inputResponses": answers(map[string]string{"user_context": `{"action":"cancel"}`}),
			}))
			assert.Equal(t, int64(protocol.CodeInvalidParams), declined.Code)
			assert.Equal(t, "the user did not accept: action=cancel", declined.Message)
			c.stop()
		})
	})

	t.Run("missing client capability", func(t *testing.T) {
		for _, tc := range []struct{ tool, need string }{
			{"test_missing_capability", `{"requiredCapabilities":{"sampling":{}}}`},
			{"test_streaming_elicitation", `{"requiredCapabilities":{"elicitation":{}}}`},
			{elicitationTool, `{"requiredCapabilities":{"elicitation":{}}}`},
		} {
			synctest.Test(t, func(t *testing.T) {
				c := startFixtures(t, stateless, map[string]any{})
				e := c.rpcError(c.send("tools/call", map[string]any{"name": tc.tool, "arguments": map[string]any{}}))
				assert.Equal(t, int64(protocol.CodeMissingRequiredClientCapability), e.Code, tc.tool)
				assert.JSONEq(t, tc.need, string(e.Data), tc.tool)
				c.stop()
			})
		}
	})
}

// In a 2025 session the input-required fixtures send real requests.
func TestInputRequiredSession(t *testing.T) {
	session := era{name: "2025-11-25"}
	type exchange struct{ method, params, answer string }
	tests := []struct {
		name   string
		caps   map[string]any
		method string // tools/call or prompts/get
		params map[string]any
		steps  []exchange
		want   string
	}{
		{
			name: "elicitation", method: "tools/call", params: map[string]any{"name": "test_input_required_result_elicitation"},
			steps: []exchange{{"elicitation/create", askName, answerAlice}},
			want:  textResult("Hello, Alice!"),
		},
		{
			name: "multiple inputs", method: "tools/call", params: map[string]any{"name": "test_input_required_result_multiple_inputs"},
			steps: []exchange{
				{"elicitation/create", askName, answerAlice},
				{"sampling/createMessage", askGreeting, answerGreet},
				{"roots/list", askRoots, answerRoots},
			},
			want: textResult("Name: Alice; Greeting: Hello there!; Roots: 1"),
		},
		{
			name: "multi round", method: "tools/call", params: map[string]any{"name": "test_input_required_result_multi_round"},
			steps: []exchange{
				{"elicitation/create", askStep1, answerAlice},
				{"elicitation/create", askStep2, `{"action":"accept","content":{"color":"blue"}}`},
			},
			want: textResult("Multi-round complete for Alice who likes blue"),
		},
		{
			name: "request state", method: "tools/call", params: map[string]any{"name": "test_input_required_result_request_state"},
			steps: []exchange{{"elicitation/create", askConfirm, answerOK}},
			want:  textResult("ok=true"),
		},
		{
			name: "capabilities, sampling only", caps: map[string]any{"sampling": map[string]any{}},
			method: "tools/call", params: map[string]any{"name": "test_input_required_result_capabilities"},
			steps: []exchange{{"sampling/createMessage", askCapital, answerParis}},
			want:  textResult("sampling: The capital of France is Paris."),
		},
		{
			name: "prompt", method: "prompts/get", params: map[string]any{"name": "test_input_required_result_prompt"},
			steps: []exchange{{"elicitation/create", askContext, `{"action":"accept","content":{"context":"test context"}}`}},
			want:  `{"messages":[{"role":"user","content":{"type":"text","text":"Prompt with context: test context"}}]}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := startFixtures(t, session, tc.caps)
				id := c.send(tc.method, tc.params)
				for _, st := range tc.steps {
					r := c.serverRequest(st.method)
					var ask struct {
						Params json.RawMessage `json:"params"`
					}
					require.NoError(t, json.Unmarshal([]byte(st.params), &ask))
					assert.JSONEq(t, string(ask.Params), string(r.Params))
					c.reply(r, st.answer)
				}
				assert.JSONEq(t, tc.want, string(c.result(id)))
				c.stop()
			})
		})
	}
}

// resourceList is resources/list, in the order registered, the skills'
// last; the view's size is its page's.
func resourceList() string {
	return `{"resources":[` +
		`{"uri":"test://static-text","name":"static-text","title":"Static Text Resource","description":"A static text resource for testing","mimeType":"text/plain"},` +
		`{"uri":"test://static-binary","name":"static-binary","title":"Static Binary Resource","description":"A static binary resource (image) for testing","mimeType":"image/png"},` +
		`{"uri":"test://watched-resource","name":"watched-resource","title":"Watched Resource",` +
		`"description":"A resource whose subscribers are notified of an update each time the vigil_touch_resource tool runs","mimeType":"text/plain"},` +
		`{"uri":"ui://vigil-everything/weather","name":"weather-view","title":"Weather view","description":"The MCP Apps view of vigil_weather",` +
		`"mimeType":"text/html;profile=mcp-app","size":` + strconv.Itoa(len(weatherView)) + `,"_meta":{"ui":{"prefersBorder":true}}},` +
		`{"uri":"skill://acme/billing/refunds/SKILL.md","name":"refunds","description":"Process customer refund requests per company policy","mimeType":"text/markdown","size":278},` +
		`{"uri":"skill://pdf-processing/SKILL.md","name":"pdf-processing","description":"Extract, fill, and assemble PDF documents","mimeType":"text/markdown","size":198}]}`
}

const (
	templateList = `{"resourceTemplates":[{"uriTemplate":"test://template/{id}/data","name":"template","title":"Resource Template",` +
		`"description":"A resource template with parameter substitution","mimeType":"application/json"}]}`
)

func TestResources(t *testing.T) {
	for _, e := range eras() {
		t.Run(e.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := startFixtures(t, e, nil)
				assert.JSONEq(t, c.want("resources/list", resourceList()), string(c.call("resources/list", nil)))
				assert.JSONEq(t, c.want("resources/templates/list", templateList), string(c.call("resources/templates/list", nil)))
				for uri, want := range map[string]string{
					"test://static-text":       `{"contents":[{"uri":"test://static-text","mimeType":"text/plain","text":"This is the content of the static text resource."}]}`,
					"test://static-binary":     `{"contents":[{"uri":"test://static-binary","mimeType":"image/png","blob":"` + testImageBase64 + `"}]}`,
					"test://template/123/data": `{"contents":[{"uri":"test://template/123/data","mimeType":"application/json","text":"{\"id\":\"123\",\"templateTest\":true,\"data\":\"Data for ID: 123\"}"}]}`,
					"test://watched-resource":  `{"contents":[{"uri":"test://watched-resource","mimeType":"text/plain","text":"Watched resource content"}]}`,
				} {
					assert.JSONEq(t, c.want("resources/read", want), string(c.call("resources/read", map[string]any{"uri": uri})), uri)
				}
				missing := "test://nonexistent-resource-for-conformance-testing"
				err := c.rpcError(c.send("resources/read", map[string]any{"uri": missing}))
				wantCode := protocol.CodeResourceNotFound
				if e.stateless {
					wantCode = protocol.CodeInvalidParams
				}
				assert.Equal(t, int64(wantCode), err.Code)
				assert.JSONEq(t, `{"uri":"`+missing+`"}`, string(err.Data))
				c.stop()
			})
		})
	}
}

// readBoth reads the response to id and one notification, in whichever
// order they come (a resource update is sent on its own goroutine).
func readBoth(c *fixtureClient, id int64) (json.RawMessage, *transport.Request) {
	c.t.Helper()
	var result json.RawMessage
	var note *transport.Request
	for range 2 {
		switch m := c.read().(type) {
		case *transport.Response:
			require.Equal(c.t, transport.Int64ID(id), m.ID)
			require.Nil(c.t, m.Error)
			result = m.Result
		case *transport.Request:
			require.True(c.t, m.IsNotification(), "want a notification, got %s", encode(c.t, m))
			note = m
		}
	}
	require.NotNil(c.t, result, "no response to %d", id)
	require.NotNil(c.t, note, "no notification")
	return result, note
}

func TestResourceSubscriptionSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startFixtures(t, era{name: "2025-11-25"}, nil)
		touched := textResult("The subscribers of test://watched-resource were notified")
		assert.JSONEq(t, `{}`, string(c.call("resources/subscribe", map[string]any{"uri": watchedURI})))
		res, note := readBoth(c, c.send("tools/call", map[string]any{"name": "vigil_touch_resource"}))
		assert.JSONEq(t, touched, string(res))
		assert.Equal(t, "notifications/resources/updated", note.Method)
		assert.JSONEq(t, `{"uri":"test://watched-resource"}`, string(note.Params))

		assert.JSONEq(t, `{}`, string(c.call("resources/unsubscribe", map[string]any{"uri": watchedURI})))
		assert.JSONEq(t, touched, string(c.callTool("vigil_touch_resource", nil)), "no notification after unsubscribe")
		c.stop()
	})
}

// listen opens a subscriptions/listen stream and checks its
// acknowledgment, which must come first.
func listen(c *fixtureClient, filter map[string]any, ack string) int64 {
	c.t.Helper()
	id := c.send("subscriptions/listen", map[string]any{"notifications": filter})
	n := c.notification()
	require.Equal(c.t, "notifications/subscriptions/acknowledged", n.Method)
	assert.JSONEq(c.t, fmt.Sprintf(`{"notifications":%s,"_meta":{"io.modelcontextprotocol/subscriptionId":%d}}`, ack, id), string(n.Params))
	return id
}

func TestResourceSubscriptionStateless(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startFixtures(t, era{name: "2026-07-28", stateless: true}, nil)
		sub := listen(c, map[string]any{"resourceSubscriptions": []string{watchedURI}}, `{"resourceSubscriptions":["test://watched-resource"]}`)
		res, note := readBoth(c, c.send("tools/call", map[string]any{"name": "vigil_touch_resource"}))
		assert.JSONEq(t, c.want("tools/call", textResult("The subscribers of test://watched-resource were notified")), string(res))
		assert.Equal(t, "notifications/resources/updated", note.Method)
		assert.JSONEq(t, fmt.Sprintf(`{"uri":"test://watched-resource","_meta":{"io.modelcontextprotocol/subscriptionId":%d}}`, sub), string(note.Params))
		c.notify("notifications/cancelled", map[string]any{"requestId": sub})
		c.stop()
	})
}

func TestListChangedStateless(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startFixtures(t, era{name: "2026-07-28", stateless: true}, nil)
		discover := c.call("server/discover", nil)
		var d struct {
			SupportedVersions []string                   `json:"supportedVersions"`
			Capabilities      map[string]json.RawMessage `json:"capabilities"`
		}
		require.NoError(t, json.Unmarshal(discover, &d))
		assert.Contains(t, d.SupportedVersions, protocol.Version20260728)
		for name, want := range map[string]string{
			"tools": `{"listChanged":true}`, "prompts": `{"listChanged":true}`, "resources": `{"subscribe":true,"listChanged":true}`,
			"completions": `{}`, "logging": `{}`,
		} {
			assert.JSONEq(t, want, string(d.Capabilities[name]), name)
		}

		// A prompts-only stream gets no tool change, only the prompt change.
		prompts := listen(c, map[string]any{"promptsListChanged": true}, `{"promptsListChanged":true}`)
		assert.JSONEq(t, c.want("tools/call", textResult("The tool list changed")), string(c.callTool("test_trigger_tool_change", nil)))
		assert.JSONEq(t, c.want("tools/call", textResult("The prompt list changed")), string(c.callTool("test_trigger_prompt_change", nil)))
		n := c.notification()
		assert.Equal(t, "notifications/prompts/list_changed", n.Method)
		assert.JSONEq(t, fmt.Sprintf(`{"_meta":{"io.modelcontextprotocol/subscriptionId":%d}}`, prompts), string(n.Params))
		c.notify("notifications/cancelled", map[string]any{"requestId": prompts})

		tools := listen(c, map[string]any{"toolsListChanged": true}, `{"toolsListChanged":true}`)
		c.callTool("test_trigger_tool_change", nil)
		n = c.notification()
		assert.Equal(t, "notifications/tools/list_changed", n.Method)
		assert.JSONEq(t, fmt.Sprintf(`{"_meta":{"io.modelcontextprotocol/subscriptionId":%d}}`, tools), string(n.Params))
		c.notify("notifications/cancelled", map[string]any{"requestId": tools})
		c.stop()
	})
}

func TestListChangedSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startFixtures(t, era{name: "2025-11-25"}, nil)
		for tool, method := range map[string]string{
			"test_trigger_tool_change":   "notifications/tools/list_changed",
			"test_trigger_prompt_change": "notifications/prompts/list_changed",
		} {
			c.callTool(tool, nil)
			n := c.notification()
			assert.Equal(t, method, n.Method)
			assert.Empty(t, n.Params)
		}
		c.stop()
	})
}

// promptList is prompts/list, in the order registered.
const promptList = `{"prompts":[` +
	`{"name":"test_simple_prompt","title":"Simple Test Prompt","description":"A simple prompt without arguments"},` +
	`{"name":"test_prompt_with_arguments","title":"Prompt With Arguments","description":"A prompt with required arguments","arguments":[` +
	`{"name":"arg1","description":"First test argument","required":true},{"name":"arg2","description":"Second test argument","required":true}]},` +
	`{"name":"test_prompt_with_embedded_resource","title":"Prompt With Embedded Resource","description":"A prompt that includes an embedded resource",` +
	`"arguments":[{"name":"resourceUri","description":"URI of the resource to embed","required":true}]},` +
	`{"name":"test_prompt_with_image","title":"Prompt With Image","description":"A prompt that includes image content"},` +
	`{"name":"test_input_required_result_prompt","description":"Test prompt: returns InputRequiredResult with elicitation request"},` +
	`{"name":"test_dynamic_prompt","description":"A prompt that test_trigger_prompt_change re-registers"}]}`

func TestPrompts(t *testing.T) {
	for _, e := range eras() {
		t.Run(e.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := startFixtures(t, e, nil)
				assert.JSONEq(t, c.want("prompts/list", promptList), string(c.call("prompts/list", nil)))
				for _, tc := range []struct {
					name string
					args map[string]any
					want string
				}{
					{"test_simple_prompt", nil, `{"messages":[{"role":"user","content":{"type":"text","text":"This is a simple prompt for testing."}}]}`},
					{
						"test_prompt_with_arguments",
						map[string]any{"arg1": "testValue1", "arg2": "testValue2"},
						`{"messages":[{"role":"user","content":{"type":"text","text":"Prompt with arguments: arg1='testValue1', arg2='testValue2'"}}]}`,
					},
					{
						"test_prompt_with_embedded_resource",
						map[string]any{"resourceUri": "test://example-resource"},
						`{"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"test://example-resource","mimeType":"text/plain","text":"Embedded resource content for testing."}}},` +
							`{"role":"user","content":{"type":"text","text":"Please process the embedded resource above."}}]}`,
					},
					{
						"test_prompt_with_image", nil,
						`{"messages":[{"role":"user","content":{"type":"image","data":"` + testImageBase64 + `","mimeType":"image/png"}},` +
							`{"role":"user","content":{"type":"text","text":"Please analyze the image above."}}]}`,
					},
					{dynamicPrompt, nil, `{"messages":[{"role":"user","content":{"type":"text","text":"This is the dynamic prompt."}}]}`},
				} {
					params := map[string]any{"name": tc.name}
					if tc.args != nil {
						params["arguments"] = tc.args
					}
					assert.JSONEq(t, c.want("prompts/get", tc.want), string(c.call("prompts/get", params)), tc.name)
				}
				missing := c.rpcError(c.send("prompts/get", map[string]any{"name": "test_prompt_with_arguments", "arguments": map[string]any{"arg1": "x"}}))
				assert.Equal(t, int64(protocol.CodeInvalidParams), missing.Code)

				for _, tc := range []struct{ arg, value, want string }{
					{"arg1", "test", `{"completion":{"values":["testValue1","testValue2"],"total":2,"hasMore":false}}`},
					{"arg2", "", `{"completion":{"values":["testValue2","value2"],"total":2,"hasMore":false}}`},
					{"arg1", "zzz", `{"completion":{"values":[],"total":0,"hasMore":false}}`},
				} {
					got := c.call("completion/complete", map[string]any{
						"ref":      map[string]any{"type": "ref/prompt", "name": "test_prompt_with_arguments"},
						"argument": map[string]any{"name": tc.arg, "value": tc.value},
					})
					assert.JSONEq(t, c.want("completion/complete", tc.want), string(got), "%s=%q", tc.arg, tc.value)
				}
				c.stop()
			})
		})
	}
}
