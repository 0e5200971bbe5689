package hostiletest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// FloodNotes is how many progress notifications the tool "flood" sends
// before its result.
const FloodNotes = 5000

// CatalogEnv is the variable whose value, "N:BYTES", makes the upstream
// list N tools more, big-1 to big-N, each with a description of BYTES bytes, one
// a page.
const CatalogEnv = "HOSTILE_CATALOG"

// InstructionsEnv is the variable whose value, BYTES, makes the upstream
// answer initialize with instructions of that many bytes.
const InstructionsEnv = "HOSTILE_INSTRUCTIONS"

// Upstream speaks MCP on standard input and output, by hand, as a
// hostile server: its tool "huge" answers a result of {"mib": N} MiB
// (its id last, as the TypeScript SDK writes it, with {"idLast": true}),
// "flood" sends 5,000 progress notifications before its result, "never"
// never answers, "logs" sends {"count": N} log messages of {"kib": K} KiB
// before its result, "pid" answers its process id. It writes "cancelled
// ID" on stderr for each notifications/cancelled.
func Upstream() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = out.Write(append(b, '\n'))
		_ = out.Flush()
	}
	answer := func(id json.RawMessage, result any) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	}
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					MiB    int  `json:"mib"`
					IDLast bool `json:"idLast"`
					Count  int  `json:"count"`
					KiB    int  `json:"kib"`
				} `json:"arguments"`
				Cursor          string          `json:"cursor"`
				RequestID       json.RawMessage `json:"requestId"`
				ProtocolVersion string          `json:"protocolVersion"` // answered as asked
				Meta            struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil {
			continue
		}
		switch msg.Method {
		case "initialize":
			size, _ := strconv.Atoi(os.Getenv(InstructionsEnv))
			answer(msg.ID, map[string]any{
				"protocolVersion": msg.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "hostile", "version": "1"}, "instructions": strings.Repeat("i", size),
			})
		case "tools/list":
			answer(msg.ID, catalogPage(msg.Params.Cursor))
		case "notifications/cancelled":
			fmt.Fprintf(os.Stderr, "cancelled %s\n", msg.Params.RequestID)
		case "tools/call":
			switch msg.Params.Name {
			case "huge":
				result := map[string]any{"content": []map[string]any{{"type": "text", "text": strings.Repeat("x", msg.Params.Arguments.MiB<<20)}}}
				if !msg.Params.Arguments.IDLast {
					answer(msg.ID, result)
					break
				}
				b, _ := json.Marshal(result)
				_, _ = fmt.Fprintf(out, `{"result":%s,"jsonrpc":"2.0","id":%s}`+"\n", b, msg.ID)
				_ = out.Flush()
			case "logs":
				data := strings.Repeat("l", msg.Params.Arguments.KiB<<10)
				for range msg.Params.Arguments.Count {
					send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": data}})
				}
				answer(msg.ID, map[string]any{"content": []map[string]any{{"type": "text", "text": "logged"}}})
			case "pid":
				answer(msg.ID, map[string]any{"content": []map[string]any{{"type": "text", "text": testkit.ProcessID(os.Getpid())}}})
			case "flood":
				for i := range FloodNotes {
					send(map[string]any{
						"jsonrpc": "2.0", "method": "notifications/progress",
						"params": map[string]any{"progressToken": msg.Params.Meta.ProgressToken, "progress": i},
					})
				}
				answer(msg.ID, map[string]any{"content": []map[string]any{{"type": "text", "text": "flooded"}}})
			}
		}
	}
	return 0
}

// catalogPage is the hostile upstream's tools/list page after cursor:
// its tools, then the big ones of CatalogEnv, one a page.
func catalogPage(cursor string) map[string]any {
	tool := func(name, description string) map[string]any {
		return map[string]any{"name": name, "description": description, "inputSchema": map[string]any{"type": "object"}}
	}
	var n, size int
	_, _ = fmt.Sscanf(os.Getenv(CatalogEnv), "%d:%d", &n, &size)
	page, _ := strconv.Atoi(cursor)
	var tools []map[string]any
	if page == 0 {
		for _, name := range []string{"huge", "flood", "never", "logs", "pid"} {
			tools = append(tools, tool(name, ""))
		}
	} else {
		tools = append(tools, tool("big-"+cursor, strings.Repeat("d", size)))
	}
	if page < n {
		return map[string]any{"tools": tools, "nextCursor": strconv.Itoa(page + 1)}
	}
	return map[string]any{"tools": tools}
}
