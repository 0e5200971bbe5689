package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The client features a handler can call: roots, elicitation and sampling.
// Each function works from a handler's context and goes through
// [CallClient], so the same code serves a 2025 session (a server-to-client
// request) and a 2026-07-28 stateless request (an input-required round).

// ErrInvalidResult is wrapped by the errors of [ListRoots], [Elicit] and
// [CreateMessage] when the client's answer does not have the shape MCP
// requires or, for an elicitation, does not match the requested schema.
var ErrInvalidResult = errors.New("mcp: invalid result from the client")

// ErrNoRequest is returned by the functions that act for a handler's
// request ([ListRoots], [Elicit], [CreateMessage],
// [NotifyElicitationComplete]) when their context carries no request.
var ErrNoRequest = errors.New("mcp: the context is not a handler's: it carries no request")

// Root is a root the client exposes (roots/list).
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// ListRoots asks the client for its roots (roots/list) on behalf of the
// handler whose context ctx is. It needs the client's roots capability;
// see [CallClient] for the errors.
func ListRoots(ctx context.Context) ([]Root, error) {
	if _, err := requestOf(ctx, "ListRoots"); err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := CallClient(ctx, "roots/list", nil, &raw); err != nil {
		return nil, err
	}
	var res struct {
		Roots []Root `json:"roots"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.Roots == nil {
		return nil, fmt.Errorf("%w: roots/list: want {\"roots\": [...]}", ErrInvalidResult)
	}
	return res.Roots, nil
}

// capabilityError refuses a call that needs a client capability the client
// did not declare; need is that capability as ClientCapabilities JSON, for
// the error data of a stateless request.
func capabilityError(req *Request, what string, need map[string]any) error {
	return req.era.capabilityError(fmt.Errorf("%w: %s", ErrCapability, what), need)
}

// requestOf returns the request of a handler's context.
func requestOf(ctx context.Context, what string) (*Request, error) {
	req := RequestFromContext(ctx)
	if req == nil || req.Session == nil {
		return nil, fmt.Errorf("%w: %s needs a handler's context", ErrNoRequest, what)
	}
	return req, nil
}

// The elicitation modes.
const (
	ElicitModeForm = "form" // a form the client shows (the default)
	ElicitModeURL  = "url"  // a URL the user opens, out of band
)

// The actions of an [ElicitResult].
const (
	ElicitAccept  = "accept"  // the user submitted the form or agreed to open the URL
	ElicitDecline = "decline" // the user explicitly declined
	ElicitCancel  = "cancel"  // the user dismissed the request without choosing
)

// ElicitParams is an elicitation/create request: a form (RequestedSchema)
// or, with Mode [ElicitModeURL], a URL for the user to open. Never ask for
// passwords, keys or other secrets in a form; use URL mode for those.
type ElicitParams struct {
	// Mode is "" or [ElicitModeForm] for a form, [ElicitModeURL] for a URL.
	// "" leaves mode out of the request, as clients before 2025-11-25
	// expect.
	Mode    string
	Message string // what the user is asked, and why; required
	// RequestedSchema is the form: required in form mode.
	RequestedSchema *ElicitSchema
	// URL is the address the user should open, in URL mode.
	URL string
	// ElicitationID identifies a URL-mode elicitation, uniquely within the
	// server; it is required in URL mode before protocol version
	// 2026-07-28, which dropped it. See [NotifyElicitationComplete].
	ElicitationID string
	Meta          Meta
}

// MarshalJSON encodes p as elicitation/create params.
func (p *ElicitParams) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Mode            string        `json:"mode,omitempty"`
		Message         string        `json:"message"`
		RequestedSchema *ElicitSchema `json:"requestedSchema,omitempty"`
		URL             string        `json:"url,omitempty"`
		ElicitationID   string        `json:"elicitationId,omitempty"`
		Meta            Meta          `json:"_meta,omitempty"`
	}{p.Mode, p.Message, p.RequestedSchema, p.URL, p.ElicitationID, p.Meta})
}

// ElicitSchema is the form of a form-mode elicitation: a flat JSON Schema
// object whose properties are primitives (MCP's restricted subset).
type ElicitSchema struct {
	// Properties are the form's fields, in the order the form shows them.
	Properties []ElicitProperty
}

// ElicitProperty is one field of an [ElicitSchema]: a string (optionally
// with Format, length bounds, or a single-select enum: Enum, Enum with the
// legacy EnumNames, or titled OneOf), a number or integer (with bounds), a
// boolean, or with Type "array" a multi-select of strings (Items). Fields
// that do not apply to the type are left zero; Default's type must match
// the field's ([]string for an array).
type ElicitProperty struct {
	Name     string `json:"-"` // the property's name; required and unique
	Required bool   `json:"-"` // listed in the schema's "required"

	Type        string `json:"type"` // "string", "number", "integer", "boolean" or "array"
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Format is a string's format: "email", "uri", "date" or "date-time".
	Format    string   `json:"format,omitempty"`
	MinLength *int     `json:"minLength,omitempty"`
	MaxLength *int     `json:"maxLength,omitempty"`
	Minimum   *float64 `json:"minimum,omitempty"`
	Maximum   *float64 `json:"maximum,omitempty"`
	// Enum lists a single-select string's values; EnumNames (deprecated)
	// gives their display names, one per value.
	Enum      []string `json:"enum,omitempty"`
	EnumNames []string `json:"enumNames,omitempty"`
	// OneOf lists a single-select string's values with display titles.
	OneOf []EnumOption `json:"oneOf,omitempty"`
	// Items are the choices of a multi-select ("array").
	Items    *ElicitItems `json:"items,omitempty"`
	MinItems *int         `json:"minItems,omitempty"`
	MaxItems *int         `json:"maxItems,omitempty"`
	Default  any          `json:"default,omitempty"`
}

// EnumOption is a value of a titled enum and the title the client shows.
type EnumOption struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// ElicitItems are the choices of a multi-select: untitled (Enum) or titled
// (AnyOf), not both.
type ElicitItems struct {
	Enum  []string
	AnyOf []EnumOption
}

// MarshalJSON encodes it as {"type":"string","enum":[...]} or
// {"anyOf":[...]}.
func (it *ElicitItems) MarshalJSON() ([]byte, error) {
	if it.AnyOf != nil {
		return json.Marshal(struct {
			AnyOf []EnumOption `json:"anyOf"`
		}{it.AnyOf})
	}
	return json.Marshal(struct {
		Type string   `json:"type"`
		Enum []string `json:"enum"`
	}{"string", it.Enum})
}

// MarshalJSON encodes s as {"type":"object","properties":{...},
// "required":[...]}, keeping the order of its properties.
func (s *ElicitSchema) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	var required []string
	for i := range s.Properties {
		p := &s.Properties[i]
		if i > 0 {
			b.WriteByte(',')
		}
		name, err := json.Marshal(p.Name)
		if err != nil {
			return nil, err
		}
		body, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("mcp: elicitation property %q: %w", p.Name, err)
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(body)
		if p.Required {
			required = append(required, p.Name)
		}
	}
	b.WriteByte('}')
	if len(required) > 0 {
		raw, err := json.Marshal(required)
		if err != nil {
			return nil, err
		}
		b.WriteString(`,"required":`)
		b.Write(raw)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// validate checks that s is within MCP's restricted schema subset.
func (s *ElicitSchema) validate() error {
	seen := map[string]bool{}
	for i := range s.Properties {
		p := &s.Properties[i]
		if p.Name == "" || seen[p.Name] {
			return fmt.Errorf("property %d: the name must be non-empty and unique", i)
		}
		seen[p.Name] = true
		if err := p.validate(); err != nil {
			return fmt.Errorf("property %q: %w", p.Name, err)
		}
	}
	return nil
}

func (p *ElicitProperty) validate() error {
	isString := p.Type == "string"
	isNumber := p.Type == "number" || p.Type == "integer"
	switch {
	case !isString && !isNumber && p.Type != "boolean" && p.Type != "array":
		return fmt.Errorf("type %q: want string, number, integer, boolean or array", p.Type)
	case !isString && (p.Format != "" || p.MinLength != nil || p.MaxLength != nil || p.Enum != nil || p.EnumNames != nil || p.OneOf != nil):
		return errors.New("format, minLength, maxLength, enum, enumNames and oneOf apply to strings only")
	case !isNumber && (p.Minimum != nil || p.Maximum != nil):
		return errors.New("minimum and maximum apply to numbers only")
	case p.Type != "array" && (p.Items != nil || p.MinItems != nil || p.MaxItems != nil):
		return errors.New("items, minItems and maxItems apply to arrays only")
	case p.Type == "array" && (p.Items == nil || (p.Items.Enum == nil) == (p.Items.AnyOf == nil)):
		return errors.New("an array needs items with either enum or anyOf")
	case p.Enum != nil && p.OneOf != nil:
		return errors.New("enum and oneOf are exclusive")
	case p.EnumNames != nil && len(p.EnumNames) != len(p.Enum):
		return errors.New("enumNames needs one name per enum value")
	case !slices.Contains([]string{"", "email", "uri", "date", "date-time"}, p.Format):
		return fmt.Errorf("format %q: want email, uri, date or date-time", p.Format)
	}
	return nil
}

// choices returns the values a single- or multi-select allows, or nil.
func (p *ElicitProperty) choices() []string {
	switch {
	case p.Enum != nil:
		return p.Enum
	case p.OneOf != nil:
		return consts(p.OneOf)
	case p.Items != nil && p.Items.Enum != nil:
		return p.Items.Enum
	case p.Items != nil:
		return consts(p.Items.AnyOf)
	}
	return nil
}

func consts(opts []EnumOption) []string {
	out := make([]string, len(opts))
	for i, o := range opts {
		out[i] = o.Const
	}
	return out
}

// check reports why v (decoded from JSON) does not fit p, or nil.
func (p *ElicitProperty) check(v any) error {
	choices := p.choices()
	switch p.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			return errors.New("want a string")
		}
		n := utf8.RuneCountInString(s)
		if p.MinLength != nil && n < *p.MinLength || p.MaxLength != nil && n > *p.MaxLength {
			return errors.New("length out of bounds")
		}
		if choices != nil && !slices.Contains(choices, s) {
			return fmt.Errorf("%q is not one of the choices", s)
		}
	case "number", "integer":
		f, ok := v.(float64)
		if !ok || p.Type == "integer" && f != math.Trunc(f) {
			return fmt.Errorf("want a JSON %s", p.Type)
		}
		if p.Minimum != nil && f < *p.Minimum || p.Maximum != nil && f > *p.Maximum {
			return errors.New("out of bounds")
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return errors.New("want a boolean")
		}
	case "array":
		items, ok := v.([]any)
		if !ok {
			return errors.New("want an array of strings")
		}
		if p.MinItems != nil && len(items) < *p.MinItems || p.MaxItems != nil && len(items) > *p.MaxItems {
			return errors.New("number of items out of bounds")
		}
		for _, it := range items {
			s, ok := it.(string)
			if !ok || !slices.Contains(choices, s) {
				return fmt.Errorf("item %v is not one of the choices", it)
			}
		}
	}
	return nil
}

// ElicitResult is the client's answer to an elicitation.
type ElicitResult struct {
	// Action is [ElicitAccept], [ElicitDecline] or [ElicitCancel].
	Action string `json:"action"`
	// Content holds the submitted form, by property name, when a form was
	// accepted: strings, float64 numbers, booleans and, for multi-selects,
	// []any of strings. It has been checked against the requested schema.
	Content map[string]any `json:"content,omitempty"`
	Meta    Meta           `json:"_meta,omitempty"`
}

// Elicit asks the user something through the client (elicitation/create),
// on behalf of the handler whose context ctx is, and returns the user's
// answer. A form needs the client's elicitation capability in form mode
// ({} or {"form":{}}), a URL its {"url":{}}; otherwise Elicit sends nothing
// and the error wraps [ErrCapability]. Invalid params are refused before
// anything is sent. An accepted form whose content does not match the
// schema (a missing required field, a wrong type, a value outside its enum
// or bounds) fails with [ErrInvalidResult]; fields the schema does not
// declare are kept. See [CallClient] for the other errors.
func Elicit(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
	req, err := requestOf(ctx, "Elicit")
	if err != nil {
		return nil, err
	}
	if p == nil || p.Message == "" {
		return nil, errors.New("mcp: elicitation/create: a message is required")
	}
	caps := req.ClientCapabilities.Elicitation
	switch p.Mode {
	case "", ElicitModeForm:
		if p.RequestedSchema == nil || p.URL != "" || p.ElicitationID != "" {
			return nil, errors.New("mcp: elicitation/create: form mode needs a requestedSchema and no url or elicitationId")
		}
		if err := p.RequestedSchema.validate(); err != nil {
			return nil, fmt.Errorf("mcp: elicitation/create: invalid requestedSchema: %w", err)
		}
		if caps == nil || caps.Form == nil && caps.URL != nil {
			need := map[string]any{"elicitation": map[string]any{}} // {} means form
			if caps != nil {
				need = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
			}
			return nil, capabilityError(req, "elicitation/create in form mode needs the client's elicitation form capability", need)
		}
	case ElicitModeURL:
		if p.URL == "" || p.RequestedSchema != nil || p.ElicitationID == "" && req.Protocol < protocol.Version20260728 {
			return nil, errors.New("mcp: elicitation/create: url mode needs a url, an elicitationId and no requestedSchema")
		}
		if caps == nil || caps.URL == nil {
			return nil, capabilityError(req, "elicitation/create in url mode needs the client's elicitation url capability",
				map[string]any{"elicitation": map[string]any{"url": map[string]any{}}})
		}
	default:
		return nil, fmt.Errorf("mcp: elicitation/create: unknown mode %q", p.Mode)
	}
	var raw json.RawMessage
	if err := CallClient(ctx, "elicitation/create", p, &raw); err != nil {
		return nil, err
	}
	var res ElicitResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("%w: elicitation/create: %w", ErrInvalidResult, err)
	}
	if err := res.check(p); err != nil {
		return nil, fmt.Errorf("%w: elicitation/create: %w", ErrInvalidResult, err)
	}
	return &res, nil
}

// check validates the answer to p.
func (r *ElicitResult) check(p *ElicitParams) error {
	switch r.Action {
	case ElicitAccept:
	case ElicitDecline, ElicitCancel:
		return nil
	default:
		return fmt.Errorf("action %q: want accept, decline or cancel", r.Action)
	}
	if p.RequestedSchema == nil {
		return nil
	}
	for i := range p.RequestedSchema.Properties {
		prop := &p.RequestedSchema.Properties[i]
		v, ok := r.Content[prop.Name]
		if !ok {
			if prop.Required {
				return fmt.Errorf("required field %q is missing", prop.Name)
			}
			continue
		}
		if err := prop.check(v); err != nil {
			return fmt.Errorf("field %q: %w", prop.Name, err)
		}
	}
	return nil
}

// NotifyElicitationComplete tells the client that the URL-mode elicitation
// id was completed (notifications/elicitation/complete), on the session of
// the handler whose context ctx is. It needs the client's elicitation url
// capability (else the error wraps [ErrCapability]) and, like
// [Session.Notify], is best effort. Call it when the out-of-band flow ends,
// even after the request that elicited is over: pass
// context.WithoutCancel(ctx) of the handler's context then.
func NotifyElicitationComplete(ctx context.Context, elicitationID string) error {
	req, err := requestOf(ctx, "NotifyElicitationComplete")
	if err != nil {
		return err
	}
	ss := req.era.session()
	if ss == nil {
		return fmt.Errorf("mcp: notifications/elicitation/complete is not part of protocol version %s", req.Protocol)
	}
	if caps := ss.ClientCapabilities().Elicitation; caps == nil || caps.URL == nil {
		return fmt.Errorf("%w: notifications/elicitation/complete needs the client's elicitation url capability", ErrCapability)
	}
	return ss.Notify(ctx, "notifications/elicitation/complete", struct {
		ElicitationID string `json:"elicitationId"`
	}{elicitationID})
}

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

// The values of [CreateMessageParams].IncludeContext.
const (
	IncludeNone       = "none"
	IncludeThisServer = "thisServer" // soft-deprecated; needs sampling.context
	IncludeAllServers = "allServers" // soft-deprecated; needs sampling.context
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
	// IncludeContext is [IncludeNone] (or ""), or a soft-deprecated value
	// that needs the client's sampling.context capability.
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

// ToolUseContent is a model's request to call a tool, in a sampling message
// or result.
type ToolUseContent struct {
	ID    string          // matches the ToolResultContent that answers it
	Name  string          // the tool's name
	Input json.RawMessage // the arguments, a JSON object; nil means {}
	Meta  Meta
}

// ToolResultContent is the result of a tool use, sent back to the model in
// a user message.
type ToolResultContent struct {
	ToolUseID         string    // the ToolUseContent's ID
	Content           []Content // as in a tool result
	StructuredContent any
	IsError           bool
	Meta              Meta
}

func (*ToolUseContent) contentType() string    { return "tool_use" }
func (*ToolResultContent) contentType() string { return "tool_result" }

// MarshalJSON encodes c as a tool_use block.
func (c *ToolUseContent) MarshalJSON() ([]byte, error) {
	input := c.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	return json.Marshal(struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
		Meta  Meta            `json:"_meta,omitempty"`
	}{"tool_use", c.ID, c.Name, input, c.Meta})
}

// MarshalJSON encodes c as a tool_result block.
func (c *ToolResultContent) MarshalJSON() ([]byte, error) {
	content := c.Content
	if content == nil {
		content = []Content{}
	}
	return json.Marshal(struct {
		Type              string    `json:"type"`
		ToolUseID         string    `json:"toolUseId"`
		Content           []Content `json:"content"`
		StructuredContent any       `json:"structuredContent,omitempty"`
		IsError           bool      `json:"isError,omitempty"`
		Meta              Meta      `json:"_meta,omitempty"`
	}{"tool_result", c.ToolUseID, content, c.StructuredContent, c.IsError, c.Meta})
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
		if p.IncludeContext != "" && p.IncludeContext != IncludeNone && caps.Context == nil && req.Protocol >= protocol.Version20251125 {
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
