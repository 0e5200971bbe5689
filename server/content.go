package server

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Meta is a _meta object: extra data keyed by (optionally prefixed) names.
type Meta map[string]any

// Annotations tell the client how to use a piece of content.
type Annotations struct {
	Audience     []string `json:"audience,omitempty"`     // "user", "assistant"
	Priority     *float64 `json:"priority,omitempty"`     // 0 (least) to 1 (most important)
	LastModified string   `json:"lastModified,omitempty"` // ISO 8601
}

// Icon is an icon a client may show for a tool, prompt, resource or server.
type Icon struct {
	Src      string   `json:"src"`
	MIMEType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"` // "light" or "dark"
}

// Content is one content block of a tool result, a prompt message or a
// sampling message: *TextContent, *ImageContent, *AudioContent,
// *ResourceLink or *EmbeddedResource.
type Content interface {
	json.Marshaler
	contentType() string
}

// TextContent is text.
type TextContent struct {
	Text        string
	Annotations *Annotations
	Meta        Meta
}

// ImageContent is an image; Data holds the raw bytes (base64 on the wire).
type ImageContent struct {
	Data        []byte
	MIMEType    string
	Annotations *Annotations
	Meta        Meta
}

// AudioContent is audio; Data holds the raw bytes (base64 on the wire).
type AudioContent struct {
	Data        []byte
	MIMEType    string
	Annotations *Annotations
	Meta        Meta
}

// ResourceLink points to a resource the client may read: the [Resource]
// as resources/list would show it (MCP's ResourceLink extends Resource).
type ResourceLink struct {
	Resource
}

// EmbeddedResource carries a resource's contents inline.
type EmbeddedResource struct {
	Resource    *ResourceContents
	Annotations *Annotations
	Meta        Meta
}

// ResourceContents is the content of a resource: text, or binary when Blob
// is non-nil (base64 on the wire).
type ResourceContents struct {
	URI      string
	MIMEType string
	Text     string
	Blob     []byte
	Meta     Meta
}

func (*TextContent) contentType() string      { return "text" }
func (*ImageContent) contentType() string     { return "image" }
func (*AudioContent) contentType() string     { return "audio" }
func (*ResourceLink) contentType() string     { return "resource_link" }
func (*EmbeddedResource) contentType() string { return "resource" }

// wireContent is the union of every content block's fields.
type wireContent struct {
	Type        string            `json:"type"`
	Text        *string           `json:"text,omitempty"`
	Data        []byte            `json:"data,omitempty"`
	MIMEType    string            `json:"mimeType,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Name        string            `json:"name,omitempty"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Size        *int64            `json:"size,omitempty"`
	Icons       []Icon            `json:"icons,omitempty"`
	Resource    *ResourceContents `json:"resource,omitempty"`
	Annotations *Annotations      `json:"annotations,omitempty"`
	Meta        Meta              `json:"_meta,omitempty"`
}

// MarshalJSON encodes c as a text block.
func (c *TextContent) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireContent{Type: "text", Text: &c.Text, Annotations: c.Annotations, Meta: c.Meta})
}

// MarshalJSON encodes c as an image block.
func (c *ImageContent) MarshalJSON() ([]byte, error) {
	return json.Marshal(binaryBlock{Type: "image", Data: nonNil(c.Data), MIMEType: c.MIMEType, Annotations: c.Annotations, Meta: c.Meta})
}

// MarshalJSON encodes c as an audio block.
func (c *AudioContent) MarshalJSON() ([]byte, error) {
	return json.Marshal(binaryBlock{Type: "audio", Data: nonNil(c.Data), MIMEType: c.MIMEType, Annotations: c.Annotations, Meta: c.Meta})
}

// binaryBlock keeps "data" present even when empty.
type binaryBlock struct {
	Type        string       `json:"type"`
	Data        []byte       `json:"data"`
	MIMEType    string       `json:"mimeType"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// MarshalJSON encodes c as a resource_link block.
func (c *ResourceLink) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireContent{
		Type: "resource_link", URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description,
		MIMEType: c.MIMEType, Size: c.Size, Icons: c.Icons, Annotations: c.Annotations, Meta: c.Meta,
	})
}

// MarshalJSON encodes c as an embedded resource block.
func (c *EmbeddedResource) MarshalJSON() ([]byte, error) {
	if c.Resource == nil {
		return nil, errors.New("mcp: embedded resource without contents")
	}
	return json.Marshal(wireContent{Type: "resource", Resource: c.Resource, Annotations: c.Annotations, Meta: c.Meta})
}

// MarshalJSON encodes rc with "blob" (base64) when Blob is non-nil, else
// with "text".
func (rc *ResourceContents) MarshalJSON() ([]byte, error) {
	w := struct {
		URI      string  `json:"uri"`
		MIMEType string  `json:"mimeType,omitempty"`
		Text     *string `json:"text,omitempty"`
		Blob     *[]byte `json:"blob,omitempty"`
		Meta     Meta    `json:"_meta,omitempty"`
	}{URI: rc.URI, MIMEType: rc.MIMEType, Meta: rc.Meta}
	if rc.Blob != nil {
		w.Blob = &rc.Blob
	} else {
		w.Text = &rc.Text
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes text or blob contents.
func (rc *ResourceContents) UnmarshalJSON(data []byte) error {
	var w struct {
		URI      string  `json:"uri"`
		MIMEType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     *[]byte `json:"blob"`
		Meta     Meta    `json:"_meta"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*rc = ResourceContents{URI: w.URI, MIMEType: w.MIMEType, Meta: w.Meta}
	switch {
	case w.Blob != nil:
		rc.Blob = nonNil(*w.Blob)
	case w.Text != nil:
		rc.Text = *w.Text
	default:
		return errors.New("mcp: resource contents need text or blob")
	}
	return nil
}

// UnmarshalContent decodes one content block by its "type". It fails for
// an unknown type or a missing field that MCP requires.
func UnmarshalContent(data []byte) (Content, error) {
	var w wireContent
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, err
	}
	if err := w.checkRequired(); err != nil {
		return nil, err
	}
	switch w.Type {
	case "text":
		if w.Text == nil {
			return nil, errors.New("mcp: text content without text")
		}
		return &TextContent{Text: *w.Text, Annotations: w.Annotations, Meta: w.Meta}, nil
	case "image":
		return &ImageContent{Data: nonNil(w.Data), MIMEType: w.MIMEType, Annotations: w.Annotations, Meta: w.Meta}, nil
	case "audio":
		return &AudioContent{Data: nonNil(w.Data), MIMEType: w.MIMEType, Annotations: w.Annotations, Meta: w.Meta}, nil
	case "resource_link":
		return &ResourceLink{Resource{
			URI: w.URI, Name: w.Name, Title: w.Title, Description: w.Description, MIMEType: w.MIMEType,
			Size: w.Size, Icons: w.Icons, Annotations: w.Annotations, Meta: w.Meta,
		}}, nil
	case "resource":
		if w.Resource == nil {
			return nil, errors.New("mcp: embedded resource without contents")
		}
		return &EmbeddedResource{Resource: w.Resource, Annotations: w.Annotations, Meta: w.Meta}, nil
	default:
		return nil, fmt.Errorf("mcp: unknown content type %q", w.Type)
	}
}

// checkRequired reports a missing field that MCP requires of an image,
// audio or resource_link block.
func (w *wireContent) checkRequired() error {
	switch w.Type {
	case "image", "audio":
		if w.Data == nil || w.MIMEType == "" {
			return fmt.Errorf("mcp: %s content needs data and mimeType", w.Type)
		}
	case "resource_link":
		if w.URI == "" || w.Name == "" {
			return errors.New("mcp: resource_link content needs uri and name")
		}
	}
	return nil
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
