package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport"
)

// demoCall sends tools/call name with args (JSON) and returns the result.
func demoCall(t *testing.T, client transport.Conn, id int64, name, args string) json.RawMessage {
	t.Helper()
	return demoRaw(t, client, id, `{"name":"`+name+`","arguments":`+args+`}`)
}

// toolResult is a tools/call result.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

func decodeToolResult(t *testing.T, raw json.RawMessage) toolResult {
	t.Helper()
	var r toolResult
	require.NoError(t, json.Unmarshal(raw, &r), string(raw))
	require.Len(t, r.Content, 1, string(raw))
	return r
}

// convert_temperature converts between the three units, with a structured
// result whose text content is the same JSON; temperatures below absolute
// zero and arguments outside the schema are tool errors.
func TestConvertTemperature(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		want    string // structuredContent
		wantErr string // the text of a tool error; "" for success
	}{
		{name: "boiling water", args: `{"value":100,"from":"celsius","to":"fahrenheit"}`, want: `{"value":212,"unit":"fahrenheit","text":"100 °C = 212 °F"}`},
		{name: "freezing water", args: `{"value":32,"from":"fahrenheit","to":"celsius"}`, want: `{"value":0,"unit":"celsius","text":"32 °F = 0 °C"}`},
		{name: "the crossing point", args: `{"value":-40,"from":"celsius","to":"fahrenheit"}`, want: `{"value":-40,"unit":"fahrenheit","text":"-40 °C = -40 °F"}`},
		{name: "absolute zero", args: `{"value":0,"from":"kelvin","to":"celsius"}`, want: `{"value":-273.15,"unit":"celsius","text":"0 K = -273.15 °C"}`},
		{name: "rounded", args: `{"value":300,"from":"kelvin","to":"celsius"}`, want: `{"value":26.85,"unit":"celsius","text":"300 K = 26.85 °C"}`},
		{name: "to kelvin", args: `{"value":212,"from":"fahrenheit","to":"kelvin"}`, want: `{"value":373.15,"unit":"kelvin","text":"212 °F = 373.15 K"}`},
		{name: "same unit", args: `{"value":21.5,"from":"celsius","to":"celsius"}`, want: `{"value":21.5,"unit":"celsius","text":"21.5 °C = 21.5 °C"}`},
		{name: "below absolute zero", args: `{"value":-300,"from":"celsius","to":"kelvin"}`, wantErr: "-300 °C is below absolute zero"},
		{name: "negative kelvin", args: `{"value":-1,"from":"kelvin","to":"celsius"}`, wantErr: "-1 K is below absolute zero"},
		{name: "unknown unit", args: `{"value":1,"from":"rankine","to":"celsius"}`, wantErr: `invalid arguments for tool "convert_temperature"`},
		{name: "missing unit", args: `{"value":1,"from":"celsius"}`, wantErr: `invalid arguments for tool "convert_temperature"`},
		{name: "not a number", args: `{"value":"hot","from":"celsius","to":"kelvin"}`, wantErr: `invalid arguments for tool "convert_temperature"`},
		{name: "extra property", args: `{"value":1,"from":"celsius","to":"kelvin","precise":true}`, wantErr: `invalid arguments for tool "convert_temperature"`},
	}
	client := demoSession(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := decodeToolResult(t, demoCall(t, client, int64(100+i), "convert_temperature", tt.args))
			if tt.wantErr != "" {
				assert.True(t, r.IsError)
				assert.Contains(t, r.Content[0].Text, tt.wantErr)
				assert.Empty(t, r.StructuredContent)
				return
			}
			assert.False(t, r.IsError)
			assert.JSONEq(t, tt.want, string(r.StructuredContent))
			assert.JSONEq(t, tt.want, r.Content[0].Text, "the text content is the structured result")
		})
	}
}

// convert_temperature declares its input enums and its inferred output
// schema.
func TestConvertTemperatureSchemas(t *testing.T) {
	client := demoSession(t)
	require.NoError(t, client.Write(t.Context(), &transport.Request{ID: transport.Int64ID(1), Method: "tools/list"}))
	m, err := client.Read(t.Context())
	require.NoError(t, err)
	resp, ok := m.(*transport.Response)
	require.True(t, ok)
	var res struct {
		Tools []struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(resp.Result, &res))
	schemas := map[string][2]string{}
	for _, tool := range res.Tools {
		schemas[tool.Name] = [2]string{string(tool.InputSchema), string(tool.OutputSchema)}
	}
	conv := schemas["convert_temperature"]
	assert.JSONEq(t, `{"type":"object","properties":{`+
		`"value":{"type":"number","description":"the temperature to convert"},`+
		`"from":{"type":"string","enum":["celsius","fahrenheit","kelvin"],"description":"the unit of value"},`+
		`"to":{"type":"string","enum":["celsius","fahrenheit","kelvin"],"description":"the unit to convert to"}},`+
		`"required":["value","from","to"],"additionalProperties":false}`, conv[0])
	var out struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	require.NoError(t, json.Unmarshal([]byte(conv[1]), &out))
	assert.Equal(t, "object", out.Type)
	assert.ElementsMatch(t, []string{"value", "unit", "text"}, out.Required)
	assert.JSONEq(t, `{"type":"number","description":"the converted temperature"}`, string(out.Properties["value"]))

	confirm := schemas["confirm_action"]
	require.NoError(t, json.Unmarshal([]byte(confirm[0]), &out))
	assert.Equal(t, []string{"action"}, out.Required)
	require.NoError(t, json.Unmarshal([]byte(confirm[1]), &out))
	assert.ElementsMatch(t, []string{"action", "decision"}, out.Required, "note is optional")
}

// confirmQuestion is the elicitation/create params confirm_action sends
// for the action "deploy v2".
const confirmQuestion = `{"message":"Do you want to allow this action? deploy v2","requestedSchema":{"type":"object","properties":{` +
	`"confirm":{"type":"boolean","title":"Allow","description":"Check to allow the action."},` +
	`"note":{"type":"string","title":"Note","description":"Anything to add (optional)."}},"required":["confirm"]}}`

// In a 2025 session, confirm_action asks the user with elicitation/create
// and reports the decision as a structured result.
func TestConfirmActionElicits(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		want   string
	}{
		{name: "confirmed", answer: `{"action":"accept","content":{"confirm":true,"note":"ship it"}}`, want: `{"action":"deploy v2","decision":"confirmed","note":"ship it"}`},
		{name: "unchecked", answer: `{"action":"accept","content":{"confirm":false}}`, want: `{"action":"deploy v2","decision":"declined"}`},
		{name: "declined", answer: `{"action":"decline"}`, want: `{"action":"deploy v2","decision":"declined"}`},
		{name: "cancelled", answer: `{"action":"cancel"}`, want: `{"action":"deploy v2","decision":"cancelled"}`},
	}
	client := demoSessionWith(t, `{"elicitation":{}}`)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := transport.Int64ID(int64(200 + i))
			demoWrite(t, client, &transport.Request{
				ID: id, Method: "tools/call",
				Params: json.RawMessage(`{"name":"confirm_action","arguments":{"action":"deploy v2"}}`),
			})
			ask, ok := demoRead(t, client).(*transport.Request)
			require.True(t, ok, "the server asks the client")
			assert.Equal(t, "elicitation/create", ask.Method)
			assert.JSONEq(t, confirmQuestion, string(ask.Params))
			demoWrite(t, client, &transport.Response{ID: ask.ID, Result: json.RawMessage(tt.answer)})
			resp, ok := demoRead(t, client).(*transport.Response)
			require.True(t, ok)
			assert.Equal(t, id, resp.ID)
			require.Nil(t, resp.Error)
			r := decodeToolResult(t, resp.Result)
			assert.False(t, r.IsError)
			assert.JSONEq(t, tt.want, string(r.StructuredContent))
		})
	}
}

// confirm_action refuses an empty action, and tells a client without the
// elicitation capability that it cannot ask, without asking.
func TestConfirmActionErrors(t *testing.T) {
	client := demoSession(t)
	r := decodeToolResult(t, demoCall(t, client, 1, "confirm_action", `{"action":""}`))
	assert.True(t, r.IsError)
	assert.Equal(t, `confirm_action needs a non-empty "action"`, r.Content[0].Text)

	r = decodeToolResult(t, demoCall(t, client, 2, "confirm_action", `{"action":"deploy v2"}`))
	assert.True(t, r.IsError)
	assert.Contains(t, r.Content[0].Text, "elicitation")
}

// In a 2026-07-28 stateless request, confirm_action answers input_required
// with the question under the key "confirm"; the retry with the answer and
// the request state gets the decision.
func TestConfirmActionMultiRoundTrip(t *testing.T) {
	client := demoServe(t)
	meta := `"_meta":{"` + vocab.MetaProtocolVersion + `":"2026-07-28","` + vocab.MetaClientCapabilities + `":{"elicitation":{}}}`
	r1 := demoRaw(t, client, 1, `{"name":"confirm_action","arguments":{"action":"deploy v2"},`+meta+`}`)
	var first struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	require.NoError(t, json.Unmarshal(r1, &first), string(r1))
	require.Equal(t, "input_required", first.ResultType, string(r1))
	require.Len(t, first.InputRequests, 1)
	assert.JSONEq(t, `{"method":"elicitation/create","params":`+confirmQuestion+`}`, string(first.InputRequests["confirm"]))
	require.NotEmpty(t, first.RequestState)

	state, err := json.Marshal(first.RequestState)
	require.NoError(t, err)
	r2 := demoRaw(t, client, 2, `{"name":"confirm_action","arguments":{"action":"deploy v2"},`+meta+
		`,"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":`+string(state)+`}`)
	var second struct {
		ResultType        string          `json:"resultType"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	require.NoError(t, json.Unmarshal(r2, &second), string(r2))
	assert.Equal(t, "complete", second.ResultType)
	assert.JSONEq(t, `{"action":"deploy v2","decision":"confirmed"}`, string(second.StructuredContent))
}

// demoRaw sends tools/call with params (JSON) and returns the result.
func demoRaw(t *testing.T, client transport.Conn, id int64, params string) json.RawMessage {
	t.Helper()
	require.NoError(t, client.Write(t.Context(), &transport.Request{ID: transport.Int64ID(id), Method: "tools/call", Params: json.RawMessage(params)}))
	m, err := client.Read(t.Context())
	require.NoError(t, err)
	resp, ok := m.(*transport.Response)
	require.True(t, ok, "want the response, got %#v", m)
	assert.Equal(t, transport.Int64ID(id), resp.ID)
	require.Nil(t, resp.Error, "%+v", resp.Error)
	return resp.Result
}
