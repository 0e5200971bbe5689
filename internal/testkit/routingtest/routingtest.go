package routingtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// Upstream serves, by hand on standard input and output (the session era,
// at the version the client asks for),
// the tool "confirm" {text, wait}: it logs "working on TEXT", asks
// elicitation/create "please confirm: TEXT", logging the line again just
// before, and answers "TEXT: ACTION", or "TEXT: not confirmed" when the
// question is refused. Calls are served one after another. A call with
// wait asks only once another call arrives, on SIGUSR1, or, when
// afterCancel is not zero, that long after its cancel ("1 s into the
// call" in the repro). It ignores cancels. On standard error it says
// "call TEXT PID", "cancelled ID", "answer TEXT ACTION" and "refused
// TEXT MESSAGE".
func Upstream(afterCancel time.Duration) int {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	var timer <-chan time.Time // afterCancel after a waiting call's cancel
	lines := make(chan []byte)
	go func() {
		in := bufio.NewScanner(os.Stdin)
		in.Buffer(nil, 1<<20)
		for in.Scan() {
			lines <- bytes.Clone(in.Bytes())
		}
		close(lines)
	}()
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = out.Write(append(b, '\n'))
		_ = out.Flush()
	}
	answer := func(id json.RawMessage, result any) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	}
	say := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	type job struct {
		id    json.RawMessage
		text  string
		wait  bool
		asked string // the id of its question, once asked
	}
	var queue []*job
	asks := 0
	ask := func() { // the oldest call's question, unless asked already
		if len(queue) == 0 || queue[0].asked != "" {
			return
		}
		j := queue[0]
		asks++
		j.asked = "ask-" + strconv.Itoa(asks)
		send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "working on " + j.text}})
		send(map[string]any{"jsonrpc": "2.0", "id": j.asked, "method": "elicitation/create", "params": map[string]any{
			"message": "please confirm: " + j.text, "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}},
		}})
	}
	for {
		var line []byte
		select {
		case <-usr1:
			ask()
			continue
		case <-timer:
			timer = nil
			ask()
			continue
		case l, ok := <-lines:
			if !ok {
				return 0
			}
			line = l
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Text string `json:"text"`
					Wait bool   `json:"wait"`
				} `json:"arguments"`
				RequestID       json.RawMessage `json:"requestId"`
				ProtocolVersion string          `json:"protocolVersion"`
			} `json:"params"`
			Result struct {
				Action string `json:"action"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &msg) != nil {
			continue
		}
		switch msg.Method {
		case "":
			var asked string
			_ = json.Unmarshal(msg.ID, &asked)
			if len(queue) == 0 || asked == "" || queue[0].asked != asked {
				continue
			}
			j := queue[0]
			queue = queue[1:]
			if msg.Error != nil {
				say("refused %s %s", j.text, msg.Error.Message)
				answer(j.id, map[string]any{"isError": true, "content": []map[string]any{{"type": "text", "text": j.text + ": not confirmed"}}})
			} else {
				say("answer %s %s", j.text, msg.Result.Action)
				answer(j.id, map[string]any{"content": []map[string]any{{"type": "text", "text": j.text + ": " + msg.Result.Action}}})
			}
			if len(queue) > 0 && !queue[0].wait {
				ask()
			}
		case "initialize":
			answer(msg.ID, map[string]any{
				"protocolVersion": msg.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}, "logging": map[string]any{}},
				"serverInfo": map[string]any{"name": "routing", "version": "1"},
			})
		case "tools/list":
			answer(msg.ID, map[string]any{"tools": []map[string]any{{"name": "confirm", "inputSchema": map[string]any{
				"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}, "wait": map[string]any{"type": "boolean"}},
			}}}})
		case "notifications/cancelled":
			say("cancelled %s", msg.Params.RequestID)
			if afterCancel > 0 && len(queue) > 0 && bytes.Equal(queue[0].id, msg.Params.RequestID) && queue[0].wait {
				timer = time.After(afterCancel)
			}
		case "tools/call":
			j := &job{id: msg.ID, text: msg.Params.Arguments.Text, wait: msg.Params.Arguments.Wait}
			say("call %s %s", j.text, testkit.ProcessID(os.Getpid()))
			send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "working on " + j.text}})
			queue = append(queue, j)
			if len(queue) > 1 || !j.wait {
				ask() // a call arriving makes the oldest one ask
			}
		default:
			if len(msg.ID) > 0 {
				answer(msg.ID, map[string]any{}) // logging/setLevel, ping
			}
		}
	}
}
