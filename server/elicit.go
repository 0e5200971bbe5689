package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	Mode    string `json:"mode,omitempty"`
	Message string `json:"message"` // what the user is asked, and why; required
	// RequestedSchema is the form, a JSON Schema given as JSON, as
	// [Tool.InputSchema] is; required in form mode. MCP restricts it to a
	// flat object whose properties are primitives: a string (with title,
	// description, format email, uri, date or date-time, minLength,
	// maxLength, default, or a single select: enum, enum with the legacy
	// enumNames, or oneOf of {const, title}), a number or integer
	// (minimum, maximum), a boolean, or an array of strings that is a
	// multi select (items {"type":"string","enum":[...]} or {"anyOf":[{const,
	// title}...]}, minItems, maxItems). The client shows the properties in
	// the order written. See [Elicit] for how it is checked.
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	// URL is the address the user should open, in URL mode.
	URL string `json:"url,omitempty"`
	// ElicitationID identifies a URL-mode elicitation, uniquely within the
	// server; it is required in URL mode before protocol version
	// 2026-07-28, which dropped it. See [NotifyElicitationComplete].
	ElicitationID string `json:"elicitationId,omitempty"`
	Meta          Meta   `json:"_meta,omitempty"`
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
// and the error wraps [ErrCapability]. Invalid params, among them a
// RequestedSchema outside MCP's restricted subset, are refused before
// anything is sent, with an error that names the property and keyword at
// fault. An accepted form whose content does not match the schema (a
// missing required field, a wrong type, a value outside its enum or
// bounds), as the validator of tools' arguments finds, fails with
// [ErrInvalidResult]; fields the schema does not declare are kept. See
// [CallClient] for the other errors.
func Elicit(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
	req, err := requestOf(ctx, "Elicit")
	if err != nil {
		return nil, err
	}
	if p == nil || p.Message == "" {
		return nil, errors.New("mcp: elicitation/create: a message is required")
	}
	caps := req.ClientCapabilities.Elicitation
	var form *objectSchema
	switch p.Mode {
	case "", ElicitModeForm:
		if len(p.RequestedSchema) == 0 || p.URL != "" || p.ElicitationID != "" {
			return nil, errors.New("mcp: elicitation/create: form mode needs a requestedSchema and no url or elicitationId")
		}
		if form, err = checkElicitSchema(p.RequestedSchema); err != nil {
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
		if p.URL == "" || len(p.RequestedSchema) != 0 || p.ElicitationID == "" && req.Protocol < protocol.Version20260728 {
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
	res, err := decodeElicitResult(raw, form)
	if err != nil {
		return nil, fmt.Errorf("%w: elicitation/create: %w", ErrInvalidResult, err)
	}
	return res, nil
}

// decodeElicitResult decodes the client's answer and, when it accepted a
// form, checks its content against the form's schema.
func decodeElicitResult(raw json.RawMessage, form *objectSchema) (*ElicitResult, error) {
	var res ElicitResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	switch res.Action {
	case ElicitAccept:
	case ElicitDecline, ElicitCancel:
		return &res, nil
	default:
		return nil, fmt.Errorf("action %q: want accept, decline or cancel", res.Action)
	}
	if form == nil {
		return &res, nil
	}
	content := []byte("{}") // no content: every required field is missing
	if res.Content != nil {
		var err error
		if content, err = json.Marshal(res.Content); err != nil {
			return nil, err
		}
	}
	if err := form.validateJSON(content); err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	return &res, nil
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
