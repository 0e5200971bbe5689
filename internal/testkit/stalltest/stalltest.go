package stalltest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// Upstream serves, by hand on standard input and output (answering the
// protocol version the client asks for), the tool "stall": at its first
// call it says "stalled PID" on standard error and stops reading, for
// good. It
// ignores SIGTERM and SIGINT; only a kill ends it.
func Upstream() int {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 8<<20)
	out := bufio.NewWriter(os.Stdout)
	answer := func(id json.RawMessage, result any) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
		_, _ = out.Write(append(b, '\n'))
		_ = out.Flush()
	}
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"` // answered as asked
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || len(msg.ID) == 0 {
			continue
		}
		switch msg.Method {
		case "initialize":
			answer(msg.ID, map[string]any{
				"protocolVersion": msg.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "stall", "version": "1"},
			})
		case "tools/list":
			answer(msg.ID, map[string]any{"tools": []map[string]any{{"name": "stall", "inputSchema": map[string]any{"type": "object"}}}})
		case "tools/call":
			fmt.Fprintf(os.Stderr, "stalled %s\n", testkit.ProcessID(os.Getpid()))
			for {
				time.Sleep(time.Hour) // reads nothing more, answers nothing
			}
		default:
			answer(msg.ID, map[string]any{}) // ping, logging/setLevel
		}
	}
	return 0
}
