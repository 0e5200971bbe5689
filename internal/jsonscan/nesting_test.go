package jsonscan_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
)

func TestNestsDeeper(t *testing.T) {
	for _, tc := range []struct {
		data  string
		limit int
		want  bool
	}{
		{`1`, 0, false},
		{`{}`, 0, true},
		{`{}`, 1, false},
		{`{"a":[1,{"b":[]}]}`, 3, true},
		{`{"a":[1,{"b":[]}]}`, 4, false},
		{`[[],[],[[]]]`, 2, true},
		{`[[],[],[]]`, 2, false},
		{`{"a":"[[[[{{{{\"[[["}`, 1, false}, // brackets in strings, and an escaped quote
		{`{"a\\":"[[","b":[]}`, 1, true},    // an escaped backslash ends no string
		{strings.Repeat("[", 3000) + strings.Repeat("]", 3000), 128, true},
	} {
		assert.Equal(t, tc.want, jsonscan.NestsDeeper([]byte(tc.data), tc.limit), "%s, limit %d", tc.data, tc.limit)
	}
}
