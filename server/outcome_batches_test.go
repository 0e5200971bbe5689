package server_test

import (
	"context"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// outcomeProbe is middleware that reports, for each tools/call, the
// request's id when its AfterDone function runs, with the end time that
// function saw.
type outcomeProbe struct {
	after  chan afterSeen
	panics map[int64]bool // ids whose AfterDone function panics
}

type afterSeen struct {
	id    int64
	ended time.Time
}

func newOutcomeProbe() *outcomeProbe {
	return &outcomeProbe{after: make(chan afterSeen, 16), panics: map[int64]bool{}}
}

func (p *outcomeProbe) middleware(next server.Handler) server.Handler {
	return func(ctx context.Context, req *server.Request) (any, error) {
		if req.Method != "tools/call" {
			return next(ctx, req)
		}
		id, _ := strconv.ParseInt(req.ID.String(), 10, 64)
		serverhook.Of[server.Outcome](ctx).AfterDone(func(out server.Outcome) {
			if p.panics[id] {
				panic("scripted AfterDone panic")
			}
			p.after <- afterSeen{id: id, ended: out.Ended}
		})
		return next(ctx, req)
	}
}

// call makes tools/call id and waits until the server is done with it
// (in the synctest bubble: every goroutine blocked).
func (p *outcomeProbe) call(h *harness, id int64) {
	h.SendCallTool(id, "echo", `{}`)
	h.RecvResult(id)
	synctest.Wait()
}

// ran returns the ids whose AfterDone functions ran so far.
func (p *outcomeProbe) ran() []int64 {
	var ids []int64
	for {
		select {
		case s := <-p.after:
			ids = append(ids, s.id)
		default:
			return ids
		}
	}
}

func newProbedHarness(t *testing.T, p *outcomeProbe, opts ...server.Option) *harness {
	h := newHarness(t, append(opts, server.WithMiddleware(p.middleware))...)
	h.addTool("echo", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hi"), nil
	})
	h.start()
	h.Initialize(protocol.Version20251125, nil)
	return h
}

// TestAfterDoneRunsAtOnceWithoutBatches checks that, by default, a
// request's AfterDone functions run when it is sealed, with the outcome's
// end.
func TestAfterDoneRunsAtOnceWithoutBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newOutcomeProbe()
		h := newProbedHarness(t, p)
		start := time.Now()
		time.Sleep(time.Second) // the bubble's clock: the end is the request's
		p.call(h, 2)
		got := <-p.after
		assert.Equal(t, int64(2), got.id)
		assert.True(t, got.ended.After(start))
		p.call(h, 3)
		assert.Equal(t, []int64{3}, p.ran())
	})
}

// TestOutcomeBatchesRunFullBatchesInSealOrder checks that AfterDone
// functions wait for a full batch, which then runs in the order the
// requests were sealed, and that a flush and Close run a partial one
// before they return. Every request counts in a batch (the harness's
// observer hears of each): initialize is the first.
func TestOutcomeBatchesRunFullBatchesInSealOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newOutcomeProbe()
		h := newProbedHarness(t, p, server.WithOutcomeBatches(3, time.Hour))
		p.call(h, 2)
		assert.Empty(t, p.ran(), "two of a batch of three: nothing runs yet")
		p.call(h, 3) // the third: the batch runs, on a goroutine of the server's
		assert.Equal(t, []int64{2, 3}, p.ran())
		p.call(h, 4)
		p.call(h, 5)
		assert.Empty(t, p.ran())
		p.call(h, 6)
		assert.Equal(t, []int64{4, 5, 6}, p.ran())
		p.call(h, 7)
		assert.Empty(t, p.ran())
		server.FlushOutcomes(h.srv)
		assert.Equal(t, []int64{7}, p.ran(), "a flush runs what waits before it returns")
		p.call(h, 8)
		assert.Empty(t, p.ran())
		require.NoError(t, h.srv.Close())
		assert.Equal(t, []int64{8}, p.ran(), "Close runs what waits before it returns")
	})
}

// TestOutcomeBatchesRunAfterTheDelay checks that a batch that does not
// fill runs once the delay after its first request has passed, with no
// one asking, and that the function sees the request's end, not the
// batch's.
func TestOutcomeBatchesRunAfterTheDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newOutcomeProbe()
		h := newProbedHarness(t, p, server.WithOutcomeBatches(100, 20*time.Millisecond))
		p.call(h, 2)
		sealed := time.Now()
		time.Sleep(19 * time.Millisecond)
		synctest.Wait()
		assert.Empty(t, p.ran(), "before the delay")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		got := <-p.after
		assert.Equal(t, int64(2), got.id)
		assert.Equal(t, sealed, got.ended, "the request's end, not the batch's")
		p.call(h, 3) // 20 ms after the last: sparse, recorded at once (see the next test)
		synctest.Wait()
		assert.Equal(t, []int64{3}, p.ran())
		p.call(h, 4) // at once after it: a new batch arms the timer again
		synctest.Wait()
		assert.Empty(t, p.ran())
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, []int64{4}, p.ran())
	})
}

// TestOutcomeBatchesRecordASparseRequestAtOnce checks that a request that
// comes half a delay or more after the last one, with no batch waiting, is
// recorded without waiting for the delay, and that the requests after it,
// closer together, are batched again.
func TestOutcomeBatchesRecordASparseRequestAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newOutcomeProbe()
		h := newProbedHarness(t, p, server.WithOutcomeBatches(100, 20*time.Millisecond))
		p.call(h, 2) // just after initialize: batched
		synctest.Wait()
		assert.Empty(t, p.ran(), "a request close to the last waits for its batch")
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, []int64{2}, p.ran())

		time.Sleep(10 * time.Millisecond) // 30 ms after the last
		p.call(h, 3)
		synctest.Wait() // no time passes
		assert.Equal(t, []int64{3}, p.ran(), "sparse: recorded at once")

		time.Sleep(9 * time.Millisecond) // under half the delay
		p.call(h, 5)
		synctest.Wait()
		assert.Empty(t, p.ran(), "closer than half the delay: batched")
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, []int64{5}, p.ran())
	})
}

// TestOutcomeBatchesLogAPanicAndGoOn checks that a panic in a batched
// AfterDone function is logged as an error and the rest of the batch runs.
func TestOutcomeBatchesLogAPanicAndGoOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newOutcomeProbe()
		p.panics[2] = true
		h := newProbedHarness(t, p, server.WithOutcomeBatches(10, time.Hour))
		p.call(h, 2)
		p.call(h, 3)
		errorsBefore := h.logs.count(slog.LevelError)
		server.FlushOutcomes(h.srv)
		assert.Equal(t, []int64{3}, p.ran())
		assert.Equal(t, errorsBefore+1, h.logs.count(slog.LevelError), "the panic is logged")
	})
}

// resultWatcher is a server's Conn that keeps a weak pointer to the
// encoded result of each response it writes, by id.
type resultWatcher struct {
	transport.Conn
	mu      sync.Mutex
	results map[string]weak.Pointer[byte]
}

func (c *resultWatcher) Write(ctx context.Context, m transport.Message) error {
	if resp, ok := m.(*transport.Response); ok && len(resp.Result) > 0 {
		c.mu.Lock()
		c.results[resp.ID.String()] = weak.Make(&resp.Result[0])
		c.mu.Unlock()
	}
	return c.Conn.Write(ctx, m)
}

// kept reports whether the encoded result of response id is still
// reachable after a collection.
func (c *resultWatcher) kept(id string) bool {
	runtime.GC()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.results[id].Value() != nil
}

// TestOutcomeBatchesRunAHeavyRequestAtOnce checks that a request whose
// result is large (64 KiB or more with its params) has its AfterDone
// functions run once it is answered, after those of the requests waiting
// before it, and that neither its result nor its encoding is kept from
// then on: a large payload is garbage once answered, not held for up to
// the batch's delay. A small request waits for its batch, before and
// after the heavy one.
func TestOutcomeBatchesRunAHeavyRequestAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newOutcomeProbe()
		h := newHarness(t, server.WithOutcomeBatches(10, time.Hour), server.WithMiddleware(p.middleware))
		h.addTool("echo", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("hi"), nil
		})
		var big weak.Pointer[server.CallToolResult]
		h.addTool("big", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			r := server.Text(strings.Repeat("x", 64<<10))
			big = weak.Make(r)
			return r, nil
		})
		conn := &resultWatcher{results: map[string]weak.Pointer[byte]{}}
		h.Client = mcptest.Pipe(t, h.srv, mcptest.WithServerConn(func(end transport.Conn) transport.Conn {
			conn.Conn = end
			return conn
		}))
		h.Initialize(protocol.Version20251125, nil)

		p.call(h, 2)
		assert.Empty(t, p.ran(), "a small request waits for its batch")
		h.SendCallTool(3, "big", `{}`)
		h.RecvResult(3)
		synctest.Wait()
		assert.Equal(t, []int64{2, 3}, p.ran(), "the heavy request runs the batch, in seal order")
		runtime.GC()
		assert.Nil(t, big.Value(), "the tool's result, once its outcome ran")
		assert.False(t, conn.kept("3"), "the encoded result, once written (the Conn keeps a weak pointer only)")
		p.call(h, 4)
		assert.Empty(t, p.ran(), "a small request waits for its batch again")
		server.FlushOutcomes(h.srv)
		assert.Equal(t, []int64{4}, p.ran())
	})
}

// TestOutcomeBatchesRunAnOldBatchAtTheNextPush checks that a batch that
// has waited half the delay runs when the next request is sealed, at once,
// rather than when the timer fires: a steady moderate rate then wakes the
// process for no timer. It checks too that the next batch's timer, while
// the requests come that steadily, waits a quarter of a second rather than
// the delay, so that a timer stopped by the next push is not due every few
// requests, and that after a sparse request the delay applies again.
func TestOutcomeBatchesRunAnOldBatchAtTheNextPush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newOutcomeProbe()
		h := newProbedHarness(t, p, server.WithOutcomeBatches(100, 20*time.Millisecond))
		p.call(h, 2) // just after initialize: batched
		time.Sleep(5 * time.Millisecond)
		p.call(h, 3)
		synctest.Wait()
		assert.Empty(t, p.ran(), "a batch 5 ms old waits")
		time.Sleep(5 * time.Millisecond)
		p.call(h, 4) // the batch is 10 ms old: it runs now, with this request
		synctest.Wait()
		assert.Equal(t, []int64{2, 3, 4}, p.ran(), "half the delay old: run at the next push")

		time.Sleep(5 * time.Millisecond)
		p.call(h, 5) // the first of a batch, after a batch run at a push
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		assert.Empty(t, p.ran(), "steady requests: the delay is not the timer's")
		time.Sleep(230*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, p.ran(), "before a quarter of a second")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, []int64{5}, p.ran(), "the pause's last batch, a quarter of a second after its first")

		p.call(h, 6) // sparse: recorded at once, and the requests no longer steady
		p.call(h, 7)
		time.Sleep(20*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, []int64{6}, p.ran())
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, []int64{7}, p.ran(), "the delay again")
	})
}
