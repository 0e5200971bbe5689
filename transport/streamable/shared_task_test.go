package streamable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// shTaskReplica is a replica whose "report" tool runs as a task until
// release is closed, and reports how its task ended on ended.
type shTaskReplica struct {
	env   *htEnv
	srv   *server.Server
	ended chan string // "released", or the cancellation cause
}

func newSHTaskReplica(t *testing.T, be shBackend, name string, viewIdle time.Duration, release <-chan struct{}, opts ...streamable.Option) *shTaskReplica {
	t.Helper()
	r := &shTaskReplica{srv: htServer(t, server.WithTaskIDPrefix(name+".")), ended: make(chan string, 4)}
	require.NoError(t, r.srv.AddTool(server.Tool{Name: "report", Execution: &server.ToolExecution{TaskSupport: server.TaskSupportOptional}},
		func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			select {
			case <-release:
				r.ended <- "released"
				return server.Text("report ready"), nil
			case <-ctx.Done():
				r.ended <- context.Cause(ctx).Error()
				return nil, context.Cause(ctx)
			}
		}))
	r.env = newHTEnv(t, r.srv, append([]streamable.Option{streamable.WithCluster(replication.Config{Cluster: be.replica(t, name), ViewIdle: viewIdle})}, opts...)...)
	return r
}

// taskStatus is what tasks/get answers, and tools/call with a task.
type taskStatus struct {
	TaskID string `json:"taskId"`
	Status string `json:"status"`
	Task   *struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	} `json:"task"`
}

// TestSharedTaskElsewhere: a 2025 session's task runs on the replica that
// created it; its tasks/get and tasks/result posted to another replica are
// forwarded there. The replica keeps its view of the session while the
// task runs, however idle the session is (letting it go would cancel the
// task), and finds the task again through a new view once it let the
// idle one go.
func TestSharedTaskElsewhere(t *testing.T) {
	shEach(t, func(t *testing.T, be shBackend) {
		release := make(chan struct{})
		const viewIdle = 20 * time.Millisecond
		a := newSHTaskReplica(t, be, "a", viewIdle, release)
		b := newSHTaskReplica(t, be, "b", 0, release)

		sid := a.env.initialize(`{}`)
		_, msgs := a.env.call(sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"report","task":{"ttl":60000}}}`)
		require.Len(t, msgs, 1)
		require.Nil(t, msgs[0].Error, "%s", msgs[0].Error)
		var created taskStatus
		require.NoError(t, json.Unmarshal(msgs[0].Result, &created))
		require.NotNil(t, created.Task)
		id := created.Task.TaskID
		require.Regexp(t, `^a\.`, id, "a's task ids name it")

		// Another session, idle on a: once a let its view go, a has been
		// through an idle timeout of the task's session too.
		other := a.env.initialize(`{}`)
		require.Eventually(t, func() bool {
			for _, ss := range a.srv.Sessions() {
				if ss.ID() == other {
					return false
				}
			}
			return true
		}, 10*time.Second, time.Millisecond, "a lets the idle view go")
		require.Len(t, a.srv.Sessions(), 1, "the view of the task's session is held")
		assert.Empty(t, a.ended, "the task runs on")

		get := func(e *htEnv, rid int) taskStatus {
			t.Helper()
			_, msgs := e.call(sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tasks/get","params":{"taskId":%q}}`, rid, id))
			require.Len(t, msgs, 1)
			require.Nil(t, msgs[0].Error, "tasks/get: %s", msgs[0].Error)
			var st taskStatus
			require.NoError(t, json.Unmarshal(msgs[0].Result, &st))
			return st
		}
		assert.Equal(t, "working", get(b.env, 2).Status, "tasks/get on b, forwarded to a")

		result := make(chan htReply, 1)
		go func() {
			result <- b.env.do(http.MethodPost, fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":%q}}`, id), htSession(sid))
		}()
		close(release)
		assert.Equal(t, "released", <-a.ended)
		resp := <-result
		require.Equal(t, http.StatusOK, resp.status, "tasks/result on b")
		msgs = resp.messages(t)
		require.NotEmpty(t, msgs, "tasks/result on b, forwarded to a")
		last := msgs[len(msgs)-1]
		require.Nil(t, last.Error, "%s", last.Error)
		assert.JSONEq(t, `{"content":[{"type":"text","text":"report ready"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"`+id+`"}}}`, string(last.Result))

		// Done, the task no longer holds the view: a lets it go, and
		// serves the task through the view it makes next.
		require.Eventually(t, func() bool { return len(a.srv.Sessions()) == 0 }, 10*time.Second, time.Millisecond, "a lets the view go")
		assert.Equal(t, "completed", get(b.env, 4).Status)
		assert.Empty(t, b.ended, "nothing ran on b")
	})
}
