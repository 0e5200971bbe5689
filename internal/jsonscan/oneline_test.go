package jsonscan_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
)

// TestOneLine: a message never leaves with CR or LF: JSON white space is
// compacted away, only it changing (a CR or LF in a string is always
// escaped in valid JSON); data that is not JSON has each replaced by a
// space and is reported invalid; data on one line already is returned as
// it is.
func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		valid    bool
	}{
		{`{"a":"x y","b":[1, 2]}`, `{"a":"x y","b":[1, 2]}`, true},
		{"{\"content\":\r\r[{\"text\":\"a\\r\\nb\"}]\r}", `{"content":[{"text":"a\r\nb"}]}`, true},
		{"{\n  \"a\": 1\r\n}", `{"a":1}`, true},
		{"not json\r\nat all\n", "not json  at all ", false},
	} {
		in := []byte(tc.in)
		line, valid := jsonscan.OneLine(in)
		assert.Equal(t, tc.want, string(line), "%q", tc.in)
		assert.Equal(t, tc.valid, valid, "%q", tc.in)
		assert.Equal(t, tc.in, string(in), "the input is not modified")
	}
}
