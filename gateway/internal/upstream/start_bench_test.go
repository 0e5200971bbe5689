package upstream_test

import (
	"testing"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/internal/sandbox"
	"github.com/vigil-mcp/vigil/transport"
)

// BenchmarkStartProcess is what a start of a stdio upstream costs, from
// the spawn to its first answer (cat echoing a notification), sandboxed
// and not: its launcher is this test binary started again (vigil's is
// vigil, whose start costs a few ms more). Compare the two with
// -benchtime=20x -count=3, their medians.
func BenchmarkStartProcess(b *testing.B) {
	for _, bc := range []struct {
		name   string
		policy *sandbox.Policy
	}{
		{"unsandboxed", nil},
		{"sandboxed", &sandbox.Policy{Home: b.TempDir(), MemoryBytes: 1 << 30, Processes: 256, OpenFiles: 1024}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			note := &transport.Request{Method: "notifications/ping"}
			for b.Loop() {
				p, err := upstream.StartProcess(upstream.ProcessConfig{Name: "cat", Argv: []string{"/bin/cat"}, Sandbox: bc.policy})
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Conn().Write(b.Context(), note); err != nil {
					b.Fatal(err)
				}
				if _, err := p.Conn().Read(b.Context()); err != nil {
					b.Fatal(err)
				}
				_ = p.Close()
			}
		})
	}
}
