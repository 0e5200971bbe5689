package server_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
)

func TestContentMarshalJSON(t *testing.T) {
	priority := 0.5
	size := int64(2048)
	annotations := &server.Annotations{Audience: []string{"user", "assistant"}, Priority: &priority, LastModified: "2025-01-12T15:00:58Z"}
	tests := []struct {
		name    string
		content server.Content
		want    string
	}{
		{
			name:    "text",
			content: &server.TextContent{Text: "hello"},
			want:    `{"type":"text","text":"hello"}`,
		},
		{
			name:    "empty text keeps its text",
			content: &server.TextContent{},
			want:    `{"type":"text","text":""}`,
		},
		{
			name:    "text with annotations and _meta",
			content: &server.TextContent{Text: "hi", Annotations: annotations, Meta: server.Meta{"example.com/k": "v"}},
			want:    `{"type":"text","text":"hi","annotations":{"audience":["user","assistant"],"priority":0.5,"lastModified":"2025-01-12T15:00:58Z"},"_meta":{"example.com/k":"v"}}`,
		},
		{
			name:    "image",
			content: &server.ImageContent{Data: []byte("\x89PNG"), MIMEType: "image/png"},
			want:    `{"type":"image","data":"iVBORw==","mimeType":"image/png"}`,
		},
		{
			name:    "empty image keeps its data",
			content: &server.ImageContent{MIMEType: "image/gif"},
			want:    `{"type":"image","data":"","mimeType":"image/gif"}`,
		},
		{
			name:    "audio with annotations",
			content: &server.AudioContent{Data: []byte{0, 1, 2, 253, 254, 255}, MIMEType: "audio/wav", Annotations: &server.Annotations{Audience: []string{"user"}}},
			want:    `{"type":"audio","data":"AAEC/f7/","mimeType":"audio/wav","annotations":{"audience":["user"]}}`,
		},
		{
			name: "resource link with size and icons",
			content: &server.ResourceLink{server.Resource{
				URI: "file:///project/main.go", Name: "main.go", Title: "Main", Description: "The entry point.",
				MIMEType: "text/x-go", Size: &size,
				Icons: []server.Icon{{Src: "https://example.com/go.svg", MIMEType: "image/svg+xml", Sizes: []string{"any"}, Theme: "dark"}},
				Meta:  server.Meta{"k": 1},
			}},
			want: `{"type":"resource_link","mimeType":"text/x-go","uri":"file:///project/main.go","name":"main.go","title":"Main","description":"The entry point.","size":2048,"icons":[{"src":"https://example.com/go.svg","mimeType":"image/svg+xml","sizes":["any"],"theme":"dark"}],"_meta":{"k":1}}`,
		},
		{
			name:    "embedded text resource",
			content: &server.EmbeddedResource{Resource: &server.ResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "abc"}},
			want:    `{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"abc"}}`,
		},
		{
			name:    "embedded empty text resource keeps its text",
			content: &server.EmbeddedResource{Resource: &server.ResourceContents{URI: "file:///empty"}},
			want:    `{"type":"resource","resource":{"uri":"file:///empty","text":""}}`,
		},
		{
			name: "embedded blob resource with annotations",
			content: &server.EmbeddedResource{
				Resource:    &server.ResourceContents{URI: "file:///a.bin", MIMEType: "application/octet-stream", Blob: []byte{0xff, 0}, Meta: server.Meta{"r": true}},
				Annotations: &server.Annotations{Priority: &priority},
				Meta:        server.Meta{"e": true},
			},
			want: `{"type":"resource","resource":{"uri":"file:///a.bin","mimeType":"application/octet-stream","blob":"/wA=","_meta":{"r":true}},"annotations":{"priority":0.5},"_meta":{"e":true}}`,
		},
		{
			name:    "embedded empty blob stays a blob",
			content: &server.EmbeddedResource{Resource: &server.ResourceContents{URI: "file:///none", Blob: []byte{}}},
			want:    `{"type":"resource","resource":{"uri":"file:///none","blob":""}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.content)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))

			// Decoding gives the same content back.
			back, err := server.UnmarshalContent(got)
			require.NoError(t, err)
			again, err := json.Marshal(back)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(again))
		})
	}
}

func TestEmbeddedResourceWithoutContents(t *testing.T) {
	_, err := json.Marshal(&server.EmbeddedResource{})
	require.EqualError(t, err, "json: error calling MarshalJSON for type *server.EmbeddedResource: mcp: embedded resource without contents")
}

func TestUnmarshalContent(t *testing.T) {
	size := int64(7)
	tests := []struct {
		name string
		in   string
		want server.Content
	}{
		{
			name: "text",
			in:   `{"type":"text","text":"hi","annotations":{"audience":["assistant"]},"_meta":{"k":"v"}}`,
			want: &server.TextContent{Text: "hi", Annotations: &server.Annotations{Audience: []string{"assistant"}}, Meta: server.Meta{"k": "v"}},
		},
		{
			name: "empty text",
			in:   `{"type":"text","text":""}`,
			want: &server.TextContent{},
		},
		{
			name: "image",
			in:   `{"type":"image","data":"AQI=","mimeType":"image/png"}`,
			want: &server.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"},
		},
		{
			name: "audio",
			in:   `{"type":"audio","data":"","mimeType":"audio/wav"}`,
			want: &server.AudioContent{Data: []byte{}, MIMEType: "audio/wav"},
		},
		{
			name: "resource link",
			in:   `{"type":"resource_link","uri":"file:///x","name":"x","size":7,"icons":[{"src":"data:,"}]}`,
			want: &server.ResourceLink{server.Resource{URI: "file:///x", Name: "x", Size: &size, Icons: []server.Icon{{Src: "data:,"}}}},
		},
		{
			name: "embedded blob",
			in:   `{"type":"resource","resource":{"uri":"file:///b","blob":"AQ=="}}`,
			want: &server.EmbeddedResource{Resource: &server.ResourceContents{URI: "file:///b", Blob: []byte{1}}},
		},
		{
			name: "embedded text",
			in:   `{"type":"resource","resource":{"uri":"file:///t","mimeType":"text/plain","text":"t"}}`,
			want: &server.EmbeddedResource{Resource: &server.ResourceContents{URI: "file:///t", MIMEType: "text/plain", Text: "t"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := server.UnmarshalContent([]byte(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestUnmarshalContentErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "unknown type", in: `{"type":"video","data":""}`, want: `mcp: unknown content type "video"`},
		{name: "no type", in: `{"text":"hi"}`, want: `mcp: unknown content type ""`},
		{name: "text without text", in: `{"type":"text"}`, want: "mcp: text content without text"},
		{name: "image without data", in: `{"type":"image","mimeType":"image/png"}`, want: "mcp: image content needs data and mimeType"},
		{name: "image without mimeType", in: `{"type":"image","data":"AQ=="}`, want: "mcp: image content needs data and mimeType"},
		{name: "audio without data", in: `{"type":"audio","mimeType":"audio/wav"}`, want: "mcp: audio content needs data and mimeType"},
		{name: "resource link without uri", in: `{"type":"resource_link","name":"x"}`, want: "mcp: resource_link content needs uri and name"},
		{name: "resource link without name", in: `{"type":"resource_link","uri":"file:///x"}`, want: "mcp: resource_link content needs uri and name"},
		{name: "resource without contents", in: `{"type":"resource"}`, want: "mcp: embedded resource without contents"},
		{name: "resource with neither text nor blob", in: `{"type":"resource","resource":{"uri":"file:///x"}}`, want: "mcp: resource contents need text or blob"},
		{name: "bad base64", in: `{"type":"image","data":"***","mimeType":"image/png"}`, want: "illegal base64 data at input byte 0"},
		{name: "not an object", in: `["text"]`, want: "json: cannot unmarshal array into Go value of type server.wireContent"},
		{name: "not JSON", in: `{`, want: "unexpected end of JSON input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := server.UnmarshalContent([]byte(tt.in))
			require.EqualError(t, err, tt.want)
			assert.Nil(t, got)
		})
	}
}
