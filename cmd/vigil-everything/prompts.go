package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vigil-mcp/vigil/server"
)

// completionCandidates are the values completion/complete suggests for an
// argument of test_prompt_with_arguments, before filtering.
func completionCandidates(argument string) []string {
	switch argument {
	case "arg1":
		return []string{"testValue1", "testValue2", "value1"}
	case "arg2":
		return []string{"testValue2", "value2"}
	}
	return nil
}

// completeArgument completes an argument of test_prompt_with_arguments: the
// candidates that start with what was typed, in order.
func completeArgument(_ context.Context, req *server.CompleteRequest) ([]string, error) {
	var out []string
	for _, v := range completionCandidates(req.Argument) {
		if strings.HasPrefix(v, req.Value) {
			out = append(out, v)
		}
	}
	return out, nil
}

// userText is a user message holding text.
func userText(text string) *server.PromptMessage {
	return &server.PromptMessage{Role: server.RoleUser, Content: &server.TextContent{Text: text}}
}

// addPrompts registers the conformance prompts.
func addPrompts(s *server.Server) error {
	png, err := decodeBase64(testImageBase64)
	if err != nil {
		return err
	}
	return errors.Join(
		s.AddPrompt(server.Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A simple prompt without arguments"},
			func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
				return &server.GetPromptResult{Messages: []*server.PromptMessage{userText("This is a simple prompt for testing.")}}, nil
			}),
		s.AddPrompt(server.Prompt{
			Name: "test_prompt_with_arguments", Title: "Prompt With Arguments", Description: "A prompt with required arguments",
			Arguments: []server.PromptArgument{
				{Name: "arg1", Description: "First test argument", Required: true, Complete: completeArgument},
				{Name: "arg2", Description: "Second test argument", Required: true, Complete: completeArgument},
			},
		}, func(_ context.Context, req *server.GetPromptRequest) (*server.GetPromptResult, error) {
			text := fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", req.Arguments["arg1"], req.Arguments["arg2"])
			return &server.GetPromptResult{Messages: []*server.PromptMessage{userText(text)}}, nil
		}),
		s.AddPrompt(server.Prompt{
			Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource",
			Description: "A prompt that includes an embedded resource",
			Arguments:   []server.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}},
		}, func(_ context.Context, req *server.GetPromptRequest) (*server.GetPromptResult, error) {
			return &server.GetPromptResult{Messages: []*server.PromptMessage{
				{Role: server.RoleUser, Content: &server.EmbeddedResource{Resource: &server.ResourceContents{
					URI: req.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing.",
				}}},
				userText("Please process the embedded resource above."),
			}}, nil
		}),
		s.AddPrompt(server.Prompt{Name: "test_prompt_with_image", Title: "Prompt With Image", Description: "A prompt that includes image content"},
			func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
				return &server.GetPromptResult{Messages: []*server.PromptMessage{
					{Role: server.RoleUser, Content: &server.ImageContent{Data: png, MIMEType: "image/png"}},
					userText("Please analyze the image above."),
				}}, nil
			}),
	)
}
