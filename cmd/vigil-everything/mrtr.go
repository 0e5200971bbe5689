package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The multi round-trip fixtures (SEP-2322). In a 2026-07-28 stateless
// request each question to the client becomes an entry of an input_required
// result, under the key the conformance suite expects (ContextWithInputKey), and
// the retry brings the answers; in a 2025 session the same handlers send
// real server-to-client requests.

// addMRTRFixtures registers the test_input_required_result_* tools and
// prompt.
func addMRTRFixtures(s *server.Server) error {
	return errors.Join(
		addNoArgTool(s, "test_input_required_result_elicitation",
			"Test tool: returns InputRequiredResult with elicitation request",
			func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				name, err := askString(ctx, "user_name", "What is your name?", "name")
				if err != nil {
					return nil, err
				}
				return server.Text("Hello, " + name + "!"), nil
			}),
		addNoArgTool(s, "test_input_required_result_sampling",
			"Test tool: returns InputRequiredResult with sampling request",
			func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				text, err := sample(ctx, "capital_question", "What is the capital of France?", 100)
				if err != nil {
					return nil, err
				}
				return server.Text("Sampling result: " + text), nil
			}),
		addNoArgTool(s, "test_input_required_result_list_roots",
			"Test tool: returns InputRequiredResult with list roots request",
			func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				roots, err := listRoots(ctx, "client_roots")
				if err != nil {
					return nil, err
				}
				return server.Text(rootsText(roots)), nil
			}),
		addNoArgTool(s, "test_input_required_result_request_state",
			"Test tool: returns InputRequiredResult with requestState",
			func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
				return confirm(ctx, req, "state-ok: requestState validated")
			}),
		addNoArgTool(s, "test_input_required_result_multiple_inputs",
			"Test tool: returns InputRequiredResult with multiple input requests",
			multipleInputs),
		addNoArgTool(s, "test_input_required_result_multi_round",
			"Test tool: returns InputRequiredResult across multiple rounds",
			func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				name, err := askString(ctx, "step1", "Step 1: What is your name?", "name")
				if err != nil {
					return nil, err
				}
				color, err := askString(ctx, "step2", "Step 2: What is your favorite color?", "color")
				if err != nil {
					return nil, err
				}
				return server.Text(fmt.Sprintf("Multi-round complete for %s who likes %s", name, color)), nil
			}),
		addNoArgTool(s, "test_input_required_result_tampered_state",
			"Test tool: returns InputRequiredResult with an integrity-protected (HMAC-signed) requestState; a retry with an altered requestState is refused with -32602",
			func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
				return confirm(ctx, req, "state-ok: requestState integrity verified")
			}),
		addNoArgTool(s, "test_input_required_result_capabilities",
			"Test tool: returns InputRequiredResult asking only through the capabilities the client declared (elicitation, sampling, roots)",
			askByCapabilities),
		s.AddPrompt(server.Prompt{
			Name:        "test_input_required_result_prompt",
			Description: "Test prompt: returns InputRequiredResult with elicitation request",
		}, func(ctx context.Context, _ *server.GetPromptRequest) (*server.GetPromptResult, error) {
			answer, err := askString(ctx, "user_context", "What context should the prompt use?", "context")
			if errors.Is(err, errDeclined) {
				return nil, server.NewError(protocol.CodeInvalidParams, err) // a prompt has no tool-error result
			}
			if err != nil {
				return nil, err
			}
			return &server.GetPromptResult{Messages: []*server.PromptMessage{userText("Prompt with context: " + answer)}}, nil
		}),
	)
}

// oneFieldSchema is the requestedSchema of a form with one required field
// of the JSON type typ.
func oneFieldSchema(field, typ string) json.RawMessage {
	name, _ := json.Marshal(field) // a string always encodes
	return json.RawMessage(`{"type":"object","properties":{` + string(name) + `:{"type":"` + typ + `"}},"required":[` + string(name) + `]}`)
}

// errDeclined is wrapped by the error of a question the user did not
// accept.
var errDeclined = errors.New("the user did not accept")

// askString asks the user (elicitation/create, under key) for one required
// string field and returns it.
func askString(ctx context.Context, key, message, field string) (string, error) {
	res, err := elicitField(ctx, key, message, field, "string")
	if err != nil {
		return "", err
	}
	v, _ := res.Content[field].(string)
	return v, nil
}

// elicitField asks the user (elicitation/create, under key) for one
// required field of the JSON type typ and returns the accepted answer.
func elicitField(ctx context.Context, key, message, field, typ string) (*server.ElicitResult, error) {
	res, err := server.Elicit(server.ContextWithInputKey(ctx, key), &server.ElicitParams{
		Message:         message,
		RequestedSchema: oneFieldSchema(field, typ),
	})
	if err != nil {
		return nil, answerError(ctx, err)
	}
	if res.Action != server.ElicitAccept {
		return nil, fmt.Errorf("%w: action=%s", errDeclined, res.Action)
	}
	return res, nil
}

// sample asks the client's model (sampling/createMessage, under key) and
// returns the text of its answer.
func sample(ctx context.Context, key, prompt string, maxTokens int) (string, error) {
	res, err := server.CreateMessage(server.ContextWithInputKey(ctx, key), &server.CreateMessageParams{
		Messages:  []server.SamplingMessage{{Role: server.RoleUser, Content: []server.Content{&server.TextContent{Text: prompt}}}},
		MaxTokens: maxTokens,
	})
	if err != nil {
		return "", answerError(ctx, err)
	}
	return firstText(res.Content), nil
}

// listRoots asks the client for its roots (roots/list, under key), with
// empty params, as the conformance suite shows the input request:
// {"method":"roots/list","params":{}}.
func listRoots(ctx context.Context, key string) ([]server.Root, error) {
	roots, err := server.ListRoots(server.ContextWithInputKey(ctx, key))
	if err != nil {
		return nil, answerError(ctx, err)
	}
	return roots, nil
}

// answerError refuses, with CodeInvalidParams, a stateless retry whose
// inputResponses hold a malformed answer: the answer is part of the
// request's params. Other errors are returned as they are.
func answerError(ctx context.Context, err error) error {
	req := server.RequestFromContext(ctx)
	if req != nil && !req.InSession() && errors.Is(err, server.ErrInvalidResult) {
		return server.NewError(protocol.CodeInvalidParams, err)
	}
	return err
}

// rootsText describes roots: "Found 1 root(s): file:///x".
func rootsText(roots []server.Root) string {
	uris := make([]string, len(roots))
	for i, r := range roots {
		uris[i] = r.URI
	}
	return fmt.Sprintf("Found %d root(s): %s", len(roots), strings.Join(uris, ", "))
}

// confirm asks the user to confirm ({ok: boolean}, under key "confirm").
// A stateless retry that carried a requestState, which the server verified
// before the handler ran, is reported with verified.
func confirm(ctx context.Context, req *server.CallToolRequest, verified string) (*server.CallToolResult, error) {
	res, err := elicitField(ctx, "confirm", "Please confirm", "ok", "boolean")
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf("ok=%v", res.Content["ok"])
	if hasRequestState(req.Request) {
		text = verified + "; " + text
	}
	return server.Text(text), nil
}

// hasRequestState reports whether req is a stateless retry with a
// requestState.
func hasRequestState(req *server.Request) bool {
	if req.InSession() {
		return false
	}
	var p struct {
		RequestState *string `json:"requestState"`
	}
	return json.Unmarshal(req.Params, &p) == nil && p.RequestState != nil
}

// multipleInputs asks three questions at once: in a stateless request they
// all go in one input_required result, since every call is made before the
// first interruption is returned.
func multipleInputs(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	name, errName := askString(ctx, "user_name", "What is your name?", "name")
	greeting, errGreeting := sample(ctx, "greeting", "Generate a greeting", 50)
	roots, errRoots := listRoots(ctx, "client_roots")
	if err := cmp.Or(errName, errGreeting, errRoots); err != nil {
		return nil, err
	}
	return server.Text(fmt.Sprintf("Name: %s; Greeting: %s; Roots: %d", name, greeting, len(roots))), nil
}

// askByCapabilities asks through every capability the client declared, and
// only those: a client with sampling but no elicitation gets a sampling
// question only.
func askByCapabilities(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
	caps := req.Request.ClientCapabilities
	var parts []string
	var errs []error
	if caps.Elicitation != nil {
		name, err := askString(ctx, "user_name", "What is your name?", "name")
		errs = append(errs, err)
		parts = append(parts, "elicitation: "+name)
	}
	if caps.Sampling != nil {
		text, err := sample(ctx, "capital_question", "What is the capital of France?", 100)
		errs = append(errs, err)
		parts = append(parts, "sampling: "+text)
	}
	if caps.Roots != nil {
		roots, err := listRoots(ctx, "client_roots")
		errs = append(errs, err)
		parts = append(parts, fmt.Sprintf("roots: %d", len(roots)))
	}
	if err := cmp.Or(errs...); err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return server.Text("The client declared no elicitation, sampling or roots capability: nothing to ask"), nil
	}
	return server.Text(strings.Join(parts, "; ")), nil
}
