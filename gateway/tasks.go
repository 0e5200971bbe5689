package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/vigil-mcp/vigil/internal/paramheader"
	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Tasks across the hop. An upstream tool keeps its execution.taskSupport
// downstream, so a client may call it as a task of the gateway's server
// (either era's wire), which runs the tool's handler in the background:
// the handler forwards a plain tools/call, or, for a tool the upstream
// runs only as a task (taskSupport "required"), a task of the upstream's
// own (tools/call with params.task, then tasks/result, which waits for
// it; a caller that goes away cancels it with tasks/cancel).

// cancelTaskWithin bounds the tasks/cancel sent for an abandoned
// upstream task.
const cancelTaskWithin = 5 * time.Second

// toolHandler returns the handler of the upstream's tool name, whose
// execution the upstream listed (retry, mirrors: see callTool).
func (m *mount) toolHandler(name string, exec *server.ToolExecution, retry bool, mirrors []paramheader.Mirror) server.ToolHandler {
	h := m.callTool(name, retry, mirrors)
	if exec != nil && exec.TaskSupport == server.TaskSupportRequired {
		h = m.callToolAsTask(name)
	}
	if exec == nil || !exec.Deferred {
		return h
	}
	relayed := m.callTool(name, retry, mirrors)
	return func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		if m.relays(ctx, "tools/call") {
			return relayed(ctx, req) // the upstream decides when it is a task (era2026.go)
		}
		return server.RunAsTask(ctx, func(ctx context.Context) (*server.CallToolResult, error) { return h(ctx, req) })
	}
}

// callToolAsTask returns the handler of a tool the upstream runs only as
// a task: it creates the upstream's task and waits for its result.
func (m *mount) callToolAsTask(name string) server.ToolHandler {
	return func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		raw, err := m.forward(ctx, "tools/call", struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments,omitempty"`
			Task      struct{}        `json:"task"`
		}{Name: name, Arguments: req.Arguments}, nil)
		if err != nil {
			return nil, err
		}
		var created struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		}
		if err := json.Unmarshal(raw, &created); err != nil || created.Task.TaskID == "" {
			return nil, server.NewError(protocol.CodeInternal, fmt.Errorf("upstream %s created no task for %s: %s", m.up.Name, name, raw))
		}
		id := map[string]string{"taskId": created.Task.TaskID}
		notes := m.callNotes(ctx, req)
		m.bounded(notes)
		raw, err = m.forward(ctx, "tasks/result", id, notes)
		if ctx.Err() != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTaskWithin)
			defer cancel()
			_, _ = m.forward(cctx, "tasks/cancel", id, nil)
		}
		if err != nil {
			return nil, err
		}
		res, err := decodeToolResult(raw)
		if err == nil {
			delete(res.Meta, vocab.MetaRelatedTask) // the upstream's task, not the caller's
		}
		return res, err
	}
}
