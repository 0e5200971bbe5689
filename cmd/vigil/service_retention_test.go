package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/debugpage"
)

// TestServiceTraceRetention: in the built vigil, a tool error and a
// client-cancelled call are still on their trace views after a burst of
// successful calls has pushed them out of the newest traces; the views
// name the outcome and the cause. The calls carry their trace context in
// _meta, so the test knows their trace ids.
func TestServiceTraceRetention(t *testing.T) {
	svc := startService(t, "-http", "127.0.0.1:0")
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	_, err := c.rpc(`1`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"retention-test","version":"1"}}`)
	require.NoError(t, err)
	require.NoError(t, c.notify("notifications/initialized"))
	meta := func(tid string) string { return `"_meta":{"traceparent":"00-` + tid + `-00f067aa0ba902b7-01"}` }
	const errTrace, cancelTrace = "4bf92f3577b34da6a3ce929d0e0e4736", "5cf92f3577b34da6a3ce929d0e0e4737"

	// A tool error: echo without its argument.
	m, err := c.rpc(`"ret-error"`, "tools/call", `{"name":"echo","arguments":{},`+meta(errTrace)+`}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	assert.Contains(t, string(m.Result), `"isError":true`)

	// A call the client cancels while it runs.
	done := make(chan error, 1)
	go func() {
		_, err := c.rpc(`"ret-cancel"`, "tools/call", `{"name":"sleep","arguments":{"ms":20000},`+meta(cancelTrace)+`}`)
		done <- err
	}()
	svcEventually(t, "the sleep in flight", 10*time.Second, func() (bool, error) {
		snap, err := svcDebug(hc, svc.base)
		return err == nil && slices.ContainsFunc(snap.InFlight, func(r debugRequest) bool { return r.ID == "ret-cancel" }), err
	})
	resp, err := c.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"ret-cancel","reason":"test"}}`)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	select {
	case err := <-done: // no answer to a cancelled call: the stream ends
		t.Logf("the cancelled call: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("the cancelled call's stream did not end")
	}

	// A burst of successful calls, more than the routine traces kept.
	for i := range debugpage.DefaultTraceRing + 50 {
		m, err := c.rpc(fmt.Sprintf(`"ok-%d"`, i), "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`)
		require.NoError(t, err)
		require.Nil(t, m.Error)
	}

	view := func(tid string) (traceView, error) {
		var v traceView
		resp, err := hc.Get(svc.base + "/debug/vigil/trace/" + tid + "?format=json")
		if err != nil {
			return v, err
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return v, fmt.Errorf("%s: %s", resp.Status, b)
		}
		return v, json.NewDecoder(resp.Body).Decode(&v)
	}
	// The last ok call's span may end just after its response: wait for
	// it in the newest traces, then the two are out of that window.
	svcEventually(t, "the burst's last trace on /debug/vigil", 10*time.Second, func() (bool, error) {
		snap, err := svcDebug(hc, svc.base)
		if err != nil {
			return false, err
		}
		last := slices.ContainsFunc(snap.Traces, func(tv traceView) bool {
			return slices.ContainsFunc(tv.Spans, func(s spanRecord) bool {
				return s.Attributes["jsonrpc.request.id"] == fmt.Sprintf("ok-%d", debugpage.DefaultTraceRing+49)
			})
		})
		if last {
			for _, tv := range snap.Traces {
				if tv.TraceID == errTrace || tv.TraceID == cancelTrace {
					return false, fmt.Errorf("%s is still among the newest traces", tv.TraceID)
				}
			}
		}
		return last, nil
	})

	v, err := view(errTrace)
	require.NoError(t, err, "the tool error's trace is kept")
	assert.Equal(t, "error", v.Outcome)
	assert.Equal(t, "invalid_arguments", v.Detail, "echo refused its empty arguments")
	assert.Equal(t, "tools/call echo", v.Key)
	require.NotEmpty(t, v.Spans)
	assert.Equal(t, "ret-error", v.Spans[0].Attributes["jsonrpc.request.id"])

	v, err = view(cancelTrace)
	require.NoError(t, err, "the cancelled call's trace is kept")
	assert.Equal(t, "cancelled", v.Outcome)
	assert.Equal(t, "client_cancel", v.Detail)
	assert.Equal(t, "tools/call sleep", v.Key)
	require.NotEmpty(t, v.Spans)
	assert.Equal(t, "ret-cancel", v.Spans[0].Attributes["jsonrpc.request.id"])

	resp, err = hc.Get(svc.base + "/debug/vigil/trace/" + cancelTrace)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "default-src 'none'"))
	assert.Contains(t, string(body), `Cancelled · cause <span class="cause">client_cancel</span>`)
	svcGet(t, hc, svc.base+"/debug/vigil/trace/0123456789abcdef0123456789abcdef", http.StatusNotFound)
}
