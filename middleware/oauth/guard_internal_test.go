package oauth

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// calledTools finds the tools a message or batch calls however the JSON
// is written, and nothing in what is not valid JSON.
func TestCalledTools(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		want []string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy"}}`, []string{"deploy"}},
		{` {"params":{"arguments":{"name":"decoy"},"name":"deploy"},"method":"tools/call"}`, []string{"deploy"}},
		{`{"method":"tools\/call","params":{"name":"dep\u006coy"}}`, []string{"deploy"}},
		{`{"method":"tools/list","params":{"name":"deploy"}}`, nil},
		{`{"method":"tools/call","params":{"name":"a"},"method":"ping"}`, nil}, // the last member wins, as in the transport
		{`[{"method":"tools/call","params":{"name":"a"}},{"method":"ping"},{"method":"tools/call","params":{"name":"b"}}]`, []string{"a", "b"}},
		{`{"method":"tools/call","params":{"name":"deploy"}`, nil},
		{`{"method":"tools/call","params":"deploy"}`, nil},
		{`{"method":"tools/call","params":{"name":7}}`, nil},
		{``, nil},
	} {
		assert.Equal(t, tc.want, calledTools([]byte(tc.body)), tc.body)
	}
}

// isB64Char accepts exactly RFC 6750's b64token characters before padding.
func TestIsB64Char(t *testing.T) {
	t.Parallel()
	for c := range 256 {
		want := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", byte(c)) >= 0
		assert.Equal(t, want, isB64Char(byte(c)), "byte %d (%q)", c, rune(c))
	}
}
