package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// Over stdio, a client that stops reading is held back: the server stops
// reading its calls once their unwritten answers fill the Conn's queue,
// and the client blocks on its own writes. When the write timeout passes,
// the queued answers are dropped and the writer is broken: what the client
// sends from then on is read and dropped, so the server holds nothing for
// it. Every call ends in exactly one outcome, answered or dropped as
// peer_gone.
func TestStdioUnreadingClientIsHeldBackThenDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const calls, size = 200, 1 << 10
		rec := newRecorder()
		srv := server.New(server.WithWriteTimeout(time.Second), server.WithObserver(rec.observer()))
		var ran atomic.Int64
		hasRun := make(chan struct{}, calls)
		require.NoError(t, srv.AddTool(server.Tool{Name: "big"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			ran.Add(1)
			hasRun <- struct{}{}
			return server.Text(strings.Repeat("a", size)), nil
		}))
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		served := make(chan error, 1)
		go func() {
			served <- srv.Serve(context.Background(), stdio.New(inR, outW, stdio.WithMaxQueuedBytes(64<<10)))
		}()
		out := bufio.NewScanner(outR)
		_, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
		require.NoError(t, err)
		require.True(t, out.Scan())
		_, err = io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		require.NoError(t, err)

		// The client sends each call once the one before has run (until
		// unpaced is closed): calls read before their handlers run are
		// what the in-flight limit bounds, not this.
		var sent atomic.Int64
		wrote, unpaced := make(chan error, 1), make(chan struct{})
		go func() {
			for i := range calls {
				if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i+2)+`,"method":"tools/call","params":{"name":"big"}}`+"\n"); err != nil {
					wrote <- err
					return
				}
				sent.Add(1)
				select {
				case <-hasRun:
				case <-unpaced:
				}
			}
			wrote <- nil
		}()
		synctest.Wait()
		assert.Less(t, sent.Load(), int64(calls), "the client is blocked writing")
		// Run: one answer being written, seven queued (9 KiB each, with
		// what their writers hold), and the few read meanwhile (a Read
		// looks at the queue before it waits for a frame).
		assert.LessOrEqual(t, ran.Load(), int64(12), "calls run")
		assert.Empty(t, rec.snapshotDrops())

		time.Sleep(2 * time.Second) // the write timeout passes
		close(unpaced)
		require.NoError(t, <-wrote, "the rest is read")
		synctest.Wait()

		// The client reads again: the answer under way arrives, and no
		// other, then its input ends.
		answered := map[string]bool{}
		take := func() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			require.NoError(t, json.Unmarshal(out.Bytes(), &m))
			require.NotNil(t, m.Result, "%s", out.Bytes())
			answered[string(m.ID)] = true
		}
		require.True(t, out.Scan(), "the answer under way")
		take()
		require.NoError(t, inW.Close())
		for out.Scan() {
			take()
		}
		require.NoError(t, <-served)
		assert.Len(t, answered, 1)
		dropped := map[string]bool{}
		for _, d := range rec.snapshotDrops() {
			assert.Equal(t, protocol.DropPeerGone, d.Reason, "drop of %s", d.ID)
			assert.False(t, dropped[d.ID] || answered[d.ID], "%s has two outcomes", d.ID)
			dropped[d.ID] = true
		}
		assert.Len(t, dropped, calls-len(answered), "every call is answered or dropped")
	})
}

// Notifications to every session wait for a writer that a client does
// not read 64 at a time at most: the others are dropped at once, each
// reported to WriteFailed as peer_gone, rather than held until the write
// timeout. The client that reads again gets the 64.
func TestStdioUnreadNotificationsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const updates, backlog = 200, 64
		rec := newRecorder()
		srv := server.New(server.WithObserver(rec.observer()))
		require.NoError(t, srv.AddResourceTemplate(server.ResourceTemplate{URITemplate: "test://{name}", Name: "any"},
			func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
				return nil, nil
			}))
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background(), stdio.New(inR, outW)) }()
		out := bufio.NewScanner(outR)
		for _, line := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
				`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://r"}}`,
		} {
			_, err := io.WriteString(inW, line+"\n")
			require.NoError(t, err)
			require.True(t, out.Scan())
		}
		require.Contains(t, out.Text(), `"id":2,"result"`)

		for range updates {
			srv.ResourceUpdated("test://r")
		}
		synctest.Wait()
		rec.mu.Lock()
		failed := slices.Clone(rec.writes)
		rec.mu.Unlock()
		assert.Len(t, failed, updates-backlog)
		for _, class := range failed {
			assert.Equal(t, protocol.DropPeerGone, class)
		}

		for range backlog {
			require.True(t, out.Scan())
			assert.Contains(t, out.Text(), `"method":"notifications/resources/updated"`)
		}
		require.NoError(t, inW.Close())
		assert.False(t, out.Scan(), "%s", out.Text())
		require.NoError(t, <-served)
	})
}
