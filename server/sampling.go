package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The stop reasons of a [CreateMessageResult]; clients may send others.
const (
	StopEndTurn   = "endTurn"
	StopSequence  = "stopSequence"
	StopMaxTokens = "maxTokens"
	StopToolUse   = "toolUse"
)

// The roles of a [SamplingMessage].
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// CreateMessageParams is a sampling/createMessage request: the client's LLM
// is asked to continue Messages.
type CreateMessageParams struct {
	Messages     []SamplingMessage `json:"messages"`
	SystemPrompt string            `json:"systemPrompt,omitempty"`
	// MaxTokens caps the tokens to sample; required, above 0.
	MaxTokens        int               `json:"maxTokens"`
	Temperature      *float64          `json:"temperature,omitempty"`
	StopSequences    []string          `json:"stopSequences,omitempty"`
	ModelPreferences *ModelPreferences `json:"modelPreferences,omitempty"`
	// IncludeContext is "" or "none", or a soft-deprecated value
	// ("thisServer", "allServers") that needs the client's
	// sampling.context capability.
	IncludeContext string         `json:"includeContext,omitempty"`
	Metadata       map[string]any `json:"metadata,omitempty"`
	// Tools the model may call, and how. Either needs the client's
	// sampling.tools capability.
	Tools      []Tool      `json:"tools,omitempty"`
	ToolChoice *ToolChoice `json:"toolChoice,omitempty"`
	Meta       Meta        `json:"_meta,omitempty"`
}

// ModelPreferences are the server's advisory preferences for the model the
// client picks. Priorities are from 0 to 1.
type ModelPreferences struct {
	Hints                []ModelHint `json:"hints,omitempty"`
	CostPriority         *float64    `json:"costPriority,omitempty"`
	SpeedPriority        *float64    `json:"speedPriority,omitempty"`
	IntelligencePriority *float64    `json:"intelligencePriority,omitempty"`
}

// ModelHint suggests a model by (a substring of) its name.
type ModelHint struct {
	Name string `json:"name,omitempty"`
}

// ToolChoice says whether the model must, may ("auto", the default) or must
// not ("none") call tools: Mode "required", "auto" or "none".
type ToolChoice struct {
	Mode string `json:"mode,omitempty"`
}

// SamplingMessage is one message of a sampling conversation. Content holds
// one block or several: *TextContent, *ImageContent, *AudioContent,
// *ToolUseContent (assistant) or *ToolResultContent (user; a message with
// tool results holds nothing else).
type SamplingMessage struct {
	Role    string // [RoleUser] or [RoleAssistant]
	Content []Content
	Meta    Meta
}

// MarshalJSON encodes m with content as one object when it has one block
// (as every client understands), else as an array.
func (m SamplingMessage) MarshalJSON() ([]byte, error) {
	content, err := marshalBlocks(m.Content)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Meta    Meta            `json:"_meta,omitempty"`
	}{m.Role, content, m.Meta})
}

// UnmarshalJSON decodes a message whose content is one block or an array.
func (m *SamplingMessage) UnmarshalJSON(data []byte) error {
	var w struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Meta    Meta            `json:"_meta"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	content, err := unmarshalBlocks(w.Content)
	if err != nil {
		return err
	}
	*m = SamplingMessage{Role: w.Role, Content: content, Meta: w.Meta}
	return nil
}

func marshalBlocks(blocks []Content) (json.RawMessage, error) {
	if len(blocks) == 0 {
		return nil, errors.New("mcp: a sampling message needs content")
	}
	if slices.Contains(blocks, nil) {
		return nil, errors.New("mcp: nil content block")
	}
	if len(blocks) == 1 {
		return json.Marshal(blocks[0])
	}
	return json.Marshal(blocks)
}

// unmarshalBlocks decodes sampling content: one block or an array of them.
func unmarshalBlocks(raw json.RawMessage) ([]Content, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, errors.New("mcp: sampling content is required")
	}
	if raw[0] != '[' {
		c, err := unmarshalSamplingBlock(raw)
		if err != nil {
			return nil, err
		}
		return []Content{c}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, errors.New("mcp: sampling content is empty")
	}
	out := make([]Content, len(items))
	for i, it := range items {
		c, err := unmarshalSamplingBlock(it)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// unmarshalSamplingBlock decodes one block of sampling content: tool use and
// tool results besides what [UnmarshalContent] knows.
func unmarshalSamplingBlock(raw json.RawMessage) (Content, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	switch head.Type {
	case "tool_use":
		var w struct {
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
			Meta  Meta            `json:"_meta"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, err
		}
		if w.ID == "" || w.Name == "" || !isJSONObject(w.Input) {
			return nil, errors.New("mcp: tool_use needs an id, a name and an input object")
		}
		return &ToolUseContent{ID: w.ID, Name: w.Name, Input: w.Input, Meta: w.Meta}, nil
	case "tool_result":
		var w struct {
			ToolUseID         string            `json:"toolUseId"`
			Content           []json.RawMessage `json:"content"`
			StructuredContent json.RawMessage   `json:"structuredContent"`
			IsError           bool              `json:"isError"`
			Meta              Meta              `json:"_meta"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, err
		}
		if w.ToolUseID == "" || w.Content == nil {
			return nil, errors.New("mcp: tool_result needs a toolUseId and content")
		}
		tr := &ToolResultContent{ToolUseID: w.ToolUseID, IsError: w.IsError, Meta: w.Meta, Content: make([]Content, len(w.Content))}
		if len(w.StructuredContent) > 0 {
			tr.StructuredContent = w.StructuredContent
		}
		for i, c := range w.Content {
			var err error
			if tr.Content[i], err = UnmarshalContent(c); err != nil {
				return nil, err
			}
		}
		return tr, nil
	}
	return UnmarshalContent(raw)
}

// CreateMessageResult is the client's answer to a sampling request.
type CreateMessageResult struct {
	Role    string    // normally [RoleAssistant]
	Content []Content // one block or several (tool uses)
	Model   string    // the model that sampled
	// StopReason is why sampling stopped: [StopEndTurn], [StopSequence],
	// [StopMaxTokens], [StopToolUse] or another client-defined reason.
	StopReason string
	Meta       Meta
}

// UnmarshalJSON decodes a result whose content is one block or an array.
func (r *CreateMessageResult) UnmarshalJSON(data []byte) error {
	var w struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		Model      string          `json:"model"`
		StopReason string          `json:"stopReason"`
		Meta       Meta            `json:"_meta"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	content, err := unmarshalBlocks(w.Content)
	if err != nil {
		return err
	}
	*r = CreateMessageResult{Role: w.Role, Content: content, Model: w.Model, StopReason: w.StopReason, Meta: w.Meta}
	return nil
}

// MarshalJSON encodes r as the client sends it.
func (r *CreateMessageResult) MarshalJSON() ([]byte, error) {
	content, err := marshalBlocks(r.Content)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		Model      string          `json:"model"`
		StopReason string          `json:"stopReason,omitempty"`
		Meta       Meta            `json:"_meta,omitempty"`
	}{r.Role, content, r.Model, r.StopReason, r.Meta})
}

// CreateMessage asks the client's LLM to sample a message
// (sampling/createMessage), on behalf of the handler whose context ctx is.
// It needs the client's sampling capability; tools, a tool choice, or tool
// use and results in the messages need sampling.tools too, and an
// includeContext other than "none" needs sampling.context (from protocol
// version 2025-11-25). Without them nothing is sent and the error wraps
// [ErrCapability]. Invalid params are refused before anything is sent; a
// malformed answer fails with [ErrInvalidResult]. See [CallClient] for the
// other errors.
func CreateMessage(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error) {
	req, err := requestOf(ctx, "CreateMessage")
	if err != nil {
		return nil, err
	}
	usesTools, err := p.validate()
	if err != nil {
		return nil, fmt.Errorf("mcp: sampling/createMessage: %w", err)
	}
	if caps := req.ClientCapabilities.Sampling; caps != nil {
		if usesTools && caps.Tools == nil {
			return nil, capabilityError(req, "tool-enabled sampling/createMessage needs the client's sampling.tools capability",
				map[string]any{"sampling": map[string]any{"tools": map[string]any{}}})
		}
		if p.IncludeContext != "" && p.IncludeContext != "none" && caps.Context == nil && req.Protocol >= protocol.Version20251125 {
			return nil, capabilityError(req, "sampling/createMessage with includeContext "+p.IncludeContext+" needs the client's sampling.context capability",
				map[string]any{"sampling": map[string]any{"context": map[string]any{}}})
		}
	}
	if len(p.Tools) > 0 {
		p = p.withSchemas()
	}
	var raw json.RawMessage
	if err := CallClient(ctx, "sampling/createMessage", p, &raw); err != nil {
		return nil, err
	}
	var res CreateMessageResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("%w: sampling/createMessage: %w", ErrInvalidResult, err)
	}
	if res.Role == "" || res.Model == "" {
		return nil, fmt.Errorf("%w: sampling/createMessage: role and model are required", ErrInvalidResult)
	}
	return &res, nil
}

// validate checks p and reports whether it uses tools.
func (p *CreateMessageParams) validate() (usesTools bool, err error) {
	if p == nil || len(p.Messages) == 0 {
		return false, errors.New("at least one message is required")
	}
	if p.MaxTokens <= 0 {
		return false, errors.New("maxTokens must be above 0")
	}
	usesTools = len(p.Tools) > 0 || p.ToolChoice != nil
	for i, m := range p.Messages {
		if m.Role != RoleUser && m.Role != RoleAssistant {
			return false, fmt.Errorf("message %d: role %q: want user or assistant", i, m.Role)
		}
		if len(m.Content) == 0 || slices.Contains(m.Content, nil) {
			return false, fmt.Errorf("message %d: content is required", i)
		}
		results := 0
		for _, c := range m.Content {
			switch c.(type) {
			case *ToolUseContent:
				usesTools = true
				if m.Role != RoleAssistant {
					return false, fmt.Errorf("message %d: tool use belongs in an assistant message", i)
				}
			case *ToolResultContent:
				usesTools = true
				results++
			}
		}
		if results > 0 && (m.Role != RoleUser || results != len(m.Content)) {
			return false, fmt.Errorf("message %d: tool results belong in a user message that holds only tool results", i)
		}
	}
	return usesTools, nil
}

// withSchemas returns a copy of p whose tools all have an input schema.
func (p *CreateMessageParams) withSchemas() *CreateMessageParams {
	cp := *p
	cp.Tools = slices.Clone(p.Tools)
	for i := range cp.Tools {
		if len(cp.Tools[i].InputSchema) == 0 {
			cp.Tools[i].InputSchema = json.RawMessage(`{"type":"object"}`)
		}
	}
	return &cp
}
