package policy_test

import (
	"testing"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

// BenchmarkCheck: a tools/call through a server with no policy, and with
// bench-auth's echo policy (the principal and the arguments read).
func BenchmarkCheck(b *testing.B) {
	for _, c := range []struct{ name, file string }{
		{"none", "tools: {}\n"},
		{"principal-and-arguments", "tools:\n  echo: 'principal.subject != \"mallory\" && size(arguments.text) < 1000'\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			srv := newServer(b, c.file, nil)
			alice := as(b, srv, &auth.Principal{Subject: "alice", Issuer: "https://as", ClientID: "c", Scopes: []string{"vigil.read"}})
			args := map[string]any{"text": "hello"}
			b.ReportAllocs()
			for b.Loop() {
				alice.CallTool("echo", args)
			}
		})
	}
}
