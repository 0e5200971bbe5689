package middleware_test

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// shareCaller names the caller of a test call by its id: "a" below 100,
// "b" from 100.
func shareCaller(req *server.Request) string {
	if n, err := strconv.Atoi(req.ID.String()); err == nil && n >= 100 {
		return "b"
	}
	return "a"
}

// With a tool share, one caller holding its share of a tool's slots is
// refused at once (even with a wait), counted as tool_share, while another
// caller's call of the same tool is admitted at once; a slot given back
// lets the first caller in again.
func TestConcurrencyLimitToolShare(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil, server.WithConcurrencyLimit(4),
			server.WithLimitWait(time.Hour), server.WithToolShare(0.5, shareCaller))
		g := addGuardTools(t, r.srv)
		r.start(nil)
		r.Initialize("", nil)

		r.SendCallTool(2, "hold", nil)
		r.SendCallTool(3, "hold", nil)
		synctest.Wait()
		t0 := time.Now()
		r.SendCallTool(4, "hold", nil)
		resp := r.RecvResponseTo(4)
		require.NotNil(t, resp.Error)
		assert.Equal(t, int64(protocol.CodeServerBusy), resp.Error.Code)
		assert.JSONEq(t, `{"quota":"tool_share","retryAfterSeconds":1}`, string(resp.Error.Data))
		assert.Zero(t, time.Since(t0), "refused at once, not queued")

		r.SendCallTool(100, "hold", nil) // admitted: the other half is free
		r.SendCallTool(101, "hold", nil)
		synctest.Wait()
		r.SendCallTool(5, "hold2", nil) // another tool: its own share
		synctest.Wait()

		for range 5 {
			g.release <- struct{}{}
			assert.Equal(t, "held", text(t, r.Recv().(*transport.Response)))
		}
		r.SendCallTool(6, "hold", nil) // "a" in again once its calls ended
		synctest.Wait()
		g.release <- struct{}{}
		assert.Equal(t, "held", text(t, r.RecvResponseTo(6)))

		got := series(t, r.m)
		assert.InDelta(t, 1.0, got[`mcp_server_quota_refusals_total{quota="tool_share"}`], 0)
		assert.Zero(t, got[`mcp_server_quota_refusals_total{quota="in_flight"}`])
		r.close()
	})
}
