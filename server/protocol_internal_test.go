package server

import (
	"testing"

	"github.com/vigil-mcp/vigil/transport"
)

// readRequestParams finds a retried round's members among the others,
// under any case, as plainRound does on its own.
func TestReadRequestParamsRound(t *testing.T) {
	for _, c := range []struct {
		params string
		round  bool
	}{
		{`{"name":"echo","arguments":{"text":"hi"},"_meta":{"k":"v"}}`, false},
		{`{"name":"echo","inputResponses":{"q":{}}}`, true},
		{`{"requestState":"s","name":"echo"}`, true},
		{`{"name":"echo","INPUTRESPONSES":{}}`, true},
		{`{"name":"echo","RequestState":null}`, true},
		{`{"name":"echo","arguments":{"inputResponses":1}}`, false}, // nested: not params'
		{`{"name":"echo","input\u0052esponses":{}}`, true},          // an escaped name, decoded
		{`{}`, false},
	} {
		var meta RequestMeta
		p, ok := readRequestParams(&transport.Request{Method: "tools/call", Params: []byte(c.params)}, &meta)
		if !ok {
			t.Fatalf("%s: not read", c.params)
		}
		if p.Round != c.round {
			t.Errorf("%s: Round %v, want %v", c.params, p.Round, c.round)
		}
		if plain := plainRound([]byte(c.params)); plain == c.round {
			t.Errorf("%s: plainRound %v, Round %v", c.params, plain, c.round)
		}
	}
}
