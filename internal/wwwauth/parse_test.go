package wwwauth_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/wwwauth"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		scheme string
		params map[string]string
	}{
		{`Bearer`, "Bearer", map[string]string{}},
		{`Bearer realm="x"`, "Bearer", map[string]string{"realm": "x"}},
		{`bearer Error=invalid_token ,  scope = "a b"`, "bearer", map[string]string{"error": "invalid_token", "scope": "a b"}},
		{`Bearer x="a\"b\\c"`, "Bearer", map[string]string{"x": `a"b\c`}},
		{`Bearer x=""`, "Bearer", map[string]string{"x": ""}},
	}
	for _, tt := range tests {
		scheme, params, err := wwwauth.Parse(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.scheme, scheme, tt.in)
		assert.Equal(t, tt.params, params, tt.in)
	}
	for _, bad := range []string{
		``, `=x`, `Bearer abc==`, `Bearer a=b c=d`, `Bearer a=b,`, `Bearer a="x`, `Bearer a=b, a=c`,
		`Bearer a=`, `Bearer a="x` + "\n" + `"`, `Bearer a=b, Basic realm="x"`,
	} {
		_, _, err := wwwauth.Parse(bad)
		require.ErrorIs(t, err, wwwauth.ErrMalformed, bad)
	}
}
