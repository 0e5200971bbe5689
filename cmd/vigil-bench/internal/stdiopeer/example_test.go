package stdiopeer_test

import (
	"context"
	"fmt"

	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/stdiopeer"
)

// A benchmark calls a server over stdio, one request at a time.
func Example() {
	p, err := stdiopeer.Start(context.Background(), "npx -y @modelcontextprotocol/server-everything stdio", "bench", "2025-06-18")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	answer, err := p.Round([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), []byte("1"))
	fmt.Println(len(answer) > 0, err)
}
