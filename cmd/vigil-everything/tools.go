package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vigil-mcp/vigil/server"
)

// The conformance suite's binary fixtures, base64 as the reference server
// sends them: a 1x1 PNG pixel and a minimal WAV file.
const (
	testImageBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	testAudioBase64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

// stepDelay separates the log messages of test_tool_with_logging and the
// progress notifications of test_tool_with_progress.
const stepDelay = 50 * time.Millisecond

// jsonSchema202012 is the input schema of json_schema_2020_12_tool,
// verbatim from the conformance suite (SEP-1613, SEP-2106).
const jsonSchema202012 = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "$anchor": "addressDef",
      "type": "object",
      "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
    }
  },
  "properties": {
    "name": {"type": "string"},
    "address": {"$ref": "#/$defs/address"},
    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
    "phone": {"type": "string"},
    "email": {"type": "string"}
  },
  "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
  "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
  "then": {"required": ["phone"]},
  "else": {"required": ["email"]},
  "additionalProperties": false
}`

// noArgs is the input of the tools that take no arguments: the server
// accepts {} (or no arguments at all) and refuses anything else.
type noArgs struct{}

// toolFunc is the handler of a tool without arguments.
type toolFunc func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error)

// addNoArgTool registers a tool that takes no arguments.
func addNoArgTool(s *server.Server, name, description string, f toolFunc) error {
	return server.AddTypedTool(s, server.Tool{Name: name, Description: description},
		func(ctx context.Context, req *server.CallToolRequest, _ noArgs) (*server.CallToolResult, error) {
			return f(ctx, req)
		})
}

// decodeBase64 decodes one of the fixture constants.
func decodeBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("fixture data: %w", err)
	}
	return b, nil
}

// addContentTools registers the tools whose results exercise the content
// types, logging, progress and tool errors, and json_schema_2020_12_tool.
func addContentTools(s *server.Server) error {
	png, err := decodeBase64(testImageBase64)
	if err != nil {
		return err
	}
	wav, err := decodeBase64(testAudioBase64)
	if err != nil {
		return err
	}
	image := func() server.Content { return &server.ImageContent{Data: png, MIMEType: "image/png"} }
	return errors.Join(
		addNoArgTool(s, "test_simple_text", "Tests simple text content response",
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return server.Text("This is a simple text response for testing."), nil
			}),
		addNoArgTool(s, "test_image_content", "Tests image content response",
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return &server.CallToolResult{Content: []server.Content{image()}}, nil
			}),
		addNoArgTool(s, "test_audio_content", "Tests audio content response",
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return &server.CallToolResult{Content: []server.Content{&server.AudioContent{Data: wav, MIMEType: "audio/wav"}}}, nil
			}),
		addNoArgTool(s, "test_embedded_resource", "Tests embedded resource content response",
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return &server.CallToolResult{Content: []server.Content{&server.EmbeddedResource{Resource: &server.ResourceContents{
					URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
				}}}}, nil
			}),
		addNoArgTool(s, "test_multiple_content_types", "Tests response with multiple content types (text, image, resource)",
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return &server.CallToolResult{Content: []server.Content{
					&server.TextContent{Text: "Multiple content types test:"},
					image(),
					&server.EmbeddedResource{Resource: &server.ResourceContents{
						URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`,
					}},
				}}, nil
			}),
		addNoArgTool(s, "test_tool_with_logging", "Tests tool that emits log messages during execution", toolWithLogging),
		addNoArgTool(s, "test_tool_with_progress", "Tests tool that reports progress notifications", toolWithProgress),
		addNoArgTool(s, "test_error_handling", "Tests error response handling",
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				res := server.Text("This tool intentionally returns an error for testing")
				res.IsError = true
				return res, nil
			}),
		s.AddTool(server.Tool{
			Name:        "json_schema_2020_12_tool",
			Description: "Tool with JSON Schema 2020-12 features",
			InputSchema: json.RawMessage(jsonSchema202012),
		}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("JSON Schema 2020-12 tool called with: " + string(req.Arguments)), nil
		}),
	)
}

// toolWithLogging sends three info messages to the client's log, stepDelay
// apart. In a 2026-07-28 request they are sent only when the request names a
// log level.
func toolWithLogging(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	log := server.ClientLogger(ctx)
	for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			if err := sleep(ctx, stepDelay); err != nil {
				return nil, err
			}
		}
		log.Info(msg)
	}
	return server.Text("Tool with logging executed successfully"), nil
}

// toolWithProgress reports 0, 50 and 100 of 100, stepDelay apart, when the
// client sent a progress token, and returns the token as text ("0" without
// one), as the reference server does.
func toolWithProgress(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
	for i, p := range []float64{0, 50, 100} {
		if i > 0 {
			if err := sleep(ctx, stepDelay); err != nil {
				return nil, err
			}
		}
		if err := server.ReportProgress(ctx, p, 100, fmt.Sprintf("Completed step %v of 100", p)); err != nil {
			return nil, err
		}
	}
	token, _ := req.Request.Meta.Get("progressToken")
	return server.Text(progressTokenText(token)), nil
}

// progressTokenText renders a progress token as JavaScript's String() would:
// a string as it is, a number in JSON notation, and "0" when absent.
func progressTokenText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "0"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// samplingArgs are the arguments of test_sampling.
type samplingArgs struct {
	Prompt string `json:"prompt" jsonschema:"The prompt to send to the LLM"`
}

// elicitationArgs are the arguments of test_elicitation.
type elicitationArgs struct {
	Message string `json:"message" jsonschema:"The message to show the user"`
}

// addClientTools registers the tools that ask the client: sampling and the
// elicitation forms of the conformance suite.
func addClientTools(s *server.Server) error {
	return errors.Join(
		server.AddTypedTool(s, server.Tool{Name: "test_sampling", Description: "Tests server-initiated sampling (LLM completion request)"},
			func(ctx context.Context, _ *server.CallToolRequest, in samplingArgs) (*server.CallToolResult, error) {
				res, err := server.CreateMessage(ctx, &server.CreateMessageParams{
					Messages:  []server.SamplingMessage{{Role: server.RoleUser, Content: []server.Content{&server.TextContent{Text: in.Prompt}}}},
					MaxTokens: 100,
				})
				if err != nil {
					return nil, err
				}
				return server.Text("LLM response: " + firstText(res.Content)), nil
			}),
		server.AddTypedTool(s, server.Tool{Name: "test_elicitation", Description: "Tests server-initiated elicitation (user input request)"},
			func(ctx context.Context, _ *server.CallToolRequest, in elicitationArgs) (*server.CallToolResult, error) {
				return elicitAndReport(ctx, "User response", &server.ElicitParams{Message: in.Message, RequestedSchema: json.RawMessage(userSchema)})
			}),
		addNoArgTool(s, "test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034",
			func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				return elicitAndReport(ctx, "Elicitation completed", &server.ElicitParams{
					Message:         "Please review and update the form fields with defaults",
					RequestedSchema: json.RawMessage(defaultsSchema),
				})
			}),
		addNoArgTool(s, "test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330",
			func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				return elicitAndReport(ctx, "Elicitation completed", &server.ElicitParams{
					Message:         "Please select options from the enum fields",
					RequestedSchema: json.RawMessage(enumsSchema),
				})
			}),
	)
}

// elicitAndReport elicits p and reports the answer as
// "<prefix>: action=<action>, content=<content as JSON>".
func elicitAndReport(ctx context.Context, prefix string, p *server.ElicitParams) (*server.CallToolResult, error) {
	res, err := server.Elicit(ctx, p)
	if err != nil {
		return nil, err
	}
	content := res.Content
	if content == nil {
		content = map[string]any{}
	}
	b, err := json.Marshal(content)
	if err != nil {
		return nil, err
	}
	return server.Text(fmt.Sprintf("%s: action=%s, content=%s", prefix, res.Action, b)), nil
}

// firstText returns the text of the first text block, or "".
func firstText(blocks []server.Content) string {
	for _, b := range blocks {
		if t, ok := b.(*server.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

// userSchema is the form of test_elicitation.
const userSchema = `{"type":"object","properties":{
	"username":{"type":"string","description":"User's response"},
	"email":{"type":"string","description":"User's email address"}},
	"required":["username","email"]}`

// defaultsSchema is the SEP-1034 form: a default for every primitive type.
const defaultsSchema = `{"type":"object","properties":{
	"name":{"type":"string","description":"User name","default":"John Doe"},
	"age":{"type":"integer","description":"User age","default":30},
	"score":{"type":"number","description":"User score","default":95.5},
	"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
	"verified":{"type":"boolean","description":"Verification status","default":true}}}`

// enumsSchema is the SEP-1330 form: the five kinds of enum.
const enumsSchema = `{"type":"object","properties":{
	"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},
	"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[
		{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
	"legacyEnum":{"type":"string","description":"Select one option (legacy)",
		"enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
	"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,
		"items":{"type":"string","enum":["option1","option2","option3"]}},
	"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,
		"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`
