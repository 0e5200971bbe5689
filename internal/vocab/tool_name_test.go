package vocab_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/vocab"
)

// TestValidToolName: MCP's tool-name rules, at their edges.
func TestValidToolName(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{name: "letters digits and punctuation", in: "Get_weather-v2.1", want: true},
		{name: "128 characters", in: strings.Repeat("x", 128), want: true},
		{name: "129 characters", in: strings.Repeat("x", 129)},
		{name: "empty"},
		{name: "space", in: "a b"},
		{name: "comma", in: "a,b"},
		{name: "non-ASCII", in: "ä"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, vocab.ValidToolName(tt.in))
		})
	}
}
