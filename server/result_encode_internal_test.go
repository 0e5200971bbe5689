package server

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hand-written encoder must say exactly what encoding/json says of the
// same result (the struct below mirrors CallToolResult's fields and tags).
func TestCallToolResultAppendJSONMatchesEncodingJSON(t *testing.T) {
	prio := 0.5
	cases := map[string]*CallToolResult{
		"empty":      {Content: []Content{}},
		"text":       Text("hello \"world\"\n\t<>&\u2028 é \xff"),
		"error":      {Content: []Content{&TextContent{Text: "boom"}}, IsError: true},
		"annotated":  {Content: []Content{&TextContent{Text: "x", Annotations: &Annotations{Priority: &prio}, Meta: Meta{"k": 1}}}},
		"mixed":      {Content: []Content{&TextContent{Text: "a"}, &ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"}, &ResourceLink{Resource{URI: "u", Name: "n"}}}},
		"structured": {Content: []Content{&TextContent{Text: `{"a":1}`}}, StructuredContent: map[string]any{"a": 1}, Meta: Meta{"m": "v"}},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := r.appendJSON(nil)
			require.NoError(t, err)
			want, err := json.Marshal(struct {
				Content           []Content `json:"content"`
				StructuredContent any       `json:"structuredContent,omitempty"`
				IsError           bool      `json:"isError,omitempty"`
				Meta              Meta      `json:"_meta,omitempty"`
			}{r.Content, r.StructuredContent, r.IsError, r.Meta})
			require.NoError(t, err)
			assert.JSONEq(t, string(want), string(got))
			assert.True(t, json.Valid(got))
		})
	}
}
