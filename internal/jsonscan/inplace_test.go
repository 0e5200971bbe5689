package jsonscan_test

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
)

// DecodeStringInPlace decodes as DecodeString does, sharing the bytes of
// a string without escapes and copying one with them.
func TestDecodeStringInPlace(t *testing.T) {
	for _, raw := range []string{`""`, `"plain text"`, `"a \"quoted\" word\n"`, `"\u00e9t\u00e9"`, `null`, `"`, `12`, ``} {
		want, wantOK := jsonscan.DecodeString([]byte(raw))
		got, ok := jsonscan.DecodeStringInPlace([]byte(raw))
		assert.Equal(t, wantOK, ok, raw)
		assert.Equal(t, want, got, raw)
	}
	raw := []byte(`"plain text"`)
	s, _ := jsonscan.DecodeStringInPlace(raw)
	assert.Same(t, &raw[1], unsafe.StringData(s), "no escapes: raw's own bytes")
	escaped := []byte(`"a\nb"`)
	s, _ = jsonscan.DecodeStringInPlace(escaped)
	assert.Equal(t, "a\nb", s)
	escaped[1] = 'X'
	assert.Equal(t, "a\nb", s, "escapes: a copy of its own")
}
