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
