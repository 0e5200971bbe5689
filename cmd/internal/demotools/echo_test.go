package demotools

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/server"
)

// TestEchoRefusesWhatIsNotAnObject: arguments that are not an object (the
// server refuses those before the tool), or not JSON at all (no decoded
// message has them), are refused, not read past their end.
func TestEchoRefusesWhatIsNotAnObject(t *testing.T) {
	for _, args := range []string{`["text"]`, `"text"`, ``, `{"text`, `{"text":"x"`, `{"text":}`} {
		_, err := echo(t.Context(), &server.CallToolRequest{Arguments: json.RawMessage(args)})
		assert.EqualError(t, err, `echo needs {"text": string}`, "%q", args)
	}
}
