package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// fake is the upstream's end of a session: a test reads what the session
// sends and writes what the upstream would.
type fake struct {
	t    *testing.T
	conn transport.Conn
}

// read returns the next message the session sent.
func (f *fake) read() transport.Message {
	f.t.Helper()
	m, err := f.conn.Read(context.Background())
	require.NoError(f.t, err)
	return m
}

// request reads the next message, which must be a request (or
// notification) for method.
func (f *fake) request(method string) *transport.Request {
	f.t.Helper()
	m := f.read()
	r, ok := m.(*transport.Request)
	require.True(f.t, ok, "got %#v, want a %s request", m, method)
	require.Equal(f.t, method, r.Method)
	return r
}

// response reads the next message, which must be a response.
func (f *fake) response() *transport.Response {
	f.t.Helper()
	m := f.read()
	r, ok := m.(*transport.Response)
	require.True(f.t, ok, "got %#v, want a response", m)
	return r
}

// send writes a message to the session.
func (f *fake) send(m transport.Message) {
	f.t.Helper()
	require.NoError(f.t, f.conn.Write(context.Background(), m))
}

// answer answers request id with result.
func (f *fake) answer(id transport.ID, result string) {
	f.t.Helper()
	f.send(&transport.Response{ID: id, Result: json.RawMessage(result)})
}

// notify sends a notification.
func (f *fake) notify(method, params string) {
	f.t.Helper()
	f.send(&transport.Request{Method: method, Params: json.RawMessage(params)})
}

// handshake plays the upstream's part of initialize.
func (f *fake) handshake() {
	f.t.Helper()
	init := f.request("initialize")
	f.answer(init.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`)
	f.request("notifications/initialized")
}

// openOn opens a session on conn while the fake at the other end, peer,
// plays the handshake.
func openOn(t *testing.T, conn, peer transport.Conn, cfg upstream.Config) (*upstream.Session, *fake) {
	t.Helper()
	f := &fake{t: t, conn: peer}
	type opened struct {
		s   *upstream.Session
		err error
	}
	done := make(chan opened, 1)
	go func() {
		s, err := upstream.Open(t.Context(), conn, cfg)
		done <- opened{s, err}
	}()
	f.handshake()
	o := <-done
	require.NoError(t, o.err)
	return o.s, f
}

// open opens a session over an in-memory pair (call it in a synctest
// bubble); the session is closed when the test ends.
func open(t *testing.T, cfg upstream.Config) (*upstream.Session, *fake) {
	t.Helper()
	a, b := memory.NewPair()
	s, f := openOn(t, a, b, cfg)
	t.Cleanup(func() {
		_ = s.Close()
		_ = b.Close()
	})
	return s, f
}

// result is what a Call returned.
type result struct {
	raw json.RawMessage
	err error
}

// callAsync calls method in a goroutine; the channel gets its result.
func callAsync(ctx context.Context, s *upstream.Session, method string, progress func(json.RawMessage)) <-chan result {
	out := make(chan result, 1)
	go func() {
		raw, err := s.Call(ctx, method, json.RawMessage(`{"name":"x"}`), progressNotes(progress))
		out <- result{raw, err}
	}()
	return out
}

func TestOpenHandshake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := memory.NewPair()
		f := &fake{t: t, conn: b}
		done := make(chan error, 1)
		var s *upstream.Session
		go func() {
			var err error
			s, err = upstream.Open(t.Context(), a, upstream.Config{Name: "u", Capabilities: json.RawMessage(`{"sampling":{}}`)})
			done <- err
		}()
		init := f.request("initialize")
		var p struct {
			ProtocolVersion string          `json:"protocolVersion"`
			Capabilities    json.RawMessage `json:"capabilities"`
			ClientInfo      struct{ Name string }
		}
		require.NoError(t, json.Unmarshal(init.Params, &p))
		assert.Equal(t, protocol.Version20251125, p.ProtocolVersion)
		assert.JSONEq(t, `{"sampling":{}}`, string(p.Capabilities))
		assert.Equal(t, "vigil", p.ClientInfo.Name)
		f.answer(init.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fake","version":"1"},"instructions":"hi"}`)
		f.request("notifications/initialized")
		require.NoError(t, <-done)
		defer func() { _ = s.Close() }()
		got := s.Initialized()
		assert.Equal(t, "2025-06-18", got.ProtocolVersion)
		assert.Equal(t, "hi", got.Instructions)
		assert.JSONEq(t, `{"tools":{"listChanged":true}}`, string(got.Capabilities))
	})
}

func TestOpenRefusesAnotherEra(t *testing.T) {
	for _, version := range []string{"2026-07-28", "1999-01-01", ""} {
		t.Run(version, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := memory.NewPair()
				defer func() { _ = b.Close() }()
				f := &fake{t: t, conn: b}
				done := make(chan error, 1)
				go func() {
					_, err := upstream.Open(t.Context(), a, upstream.Config{Name: "u"})
					done <- err
				}()
				init := f.request("initialize")
				f.answer(init.ID, fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{},"serverInfo":{"name":"f","version":"1"}}`, version))
				err := <-done
				require.Error(t, err)
				assert.Contains(t, err.Error(), "unsupported protocol version")
				_, err = b.Read(t.Context()) // Open closed its end
				assert.ErrorIs(t, err, transport.ErrPeerGone)
			})
		})
	}
}

func TestCallResultAndError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, f := open(t, upstream.Config{Name: "u"})
		got := callAsync(t.Context(), s, "tools/call", nil)
		req := f.request("tools/call")
		assert.JSONEq(t, `{"name":"x"}`, string(req.Params))
		f.answer(req.ID, `{"content":[]}`)
		r := <-got
		require.NoError(t, r.err)
		assert.JSONEq(t, `{"content":[]}`, string(r.raw))

		got = callAsync(t.Context(), s, "tools/call", nil)
		req = f.request("tools/call")
		f.send(&transport.Response{ID: req.ID, Error: &transport.Error{Code: -32602, Message: "unknown tool"}})
		r = <-got
		var jerr *transport.Error
		require.ErrorAs(t, r.err, &jerr)
		assert.Equal(t, int64(-32602), jerr.Code)
		assert.Equal(t, "unknown tool", jerr.Message)
	})
}

// TestCancelReachesTheUpstreamAtOnce: a caller whose context ends gets
// its cause, the upstream gets notifications/cancelled for the request
// at once, and the upstream's late answer is dropped and
// counted.
func TestCancelReachesTheUpstreamAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, f := open(t, upstream.Config{Name: "u"})
		cause := errors.New("the downstream client cancelled")
		ctx, cancel := context.WithCancelCause(t.Context())
		got := callAsync(ctx, s, "tools/call", nil)
		req := f.request("tools/call")
		cancel(cause)
		n := f.request("notifications/cancelled")
		var p struct {
			RequestID transport.ID `json:"requestId"`
		}
		require.NoError(t, json.Unmarshal(n.Params, &p))
		assert.Equal(t, req.ID, p.RequestID)
		r := <-got
		require.ErrorIs(t, r.err, cause)

		f.answer(req.ID, `{}`)
		synctest.Wait()
		assert.Equal(t, int64(1), s.Stats().LateResponses)
	})
}

// TestGoneAnswersEveryPendingCall is the seed's snapshot rule on the
// client side: with several calls pending, the upstream closing answers
// each with ErrGone at once, and every later call fails at once.
func TestGoneAnswersEveryPendingCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, f := open(t, upstream.Config{Name: "u"})
		var calls []<-chan result
		for range 3 {
			calls = append(calls, callAsync(t.Context(), s, "tools/call", nil))
			f.request("tools/call")
		}
		require.NoError(t, f.conn.Close())
		for _, c := range calls {
			r := <-c
			require.ErrorIs(t, r.err, upstream.ErrGone)
		}
		<-s.Done()
		require.ErrorIs(t, s.Err(), upstream.ErrGone)
		_, err := s.Call(t.Context(), "tools/list", nil, nil)
		require.ErrorIs(t, err, upstream.ErrGone)
		require.ErrorIs(t, s.Notify(t.Context(), "notifications/roots/list_changed", nil), upstream.ErrGone)
	})
}

func TestCloseAnswersPendingCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, f := open(t, upstream.Config{Name: "u"})
		got := callAsync(t.Context(), s, "tools/call", nil)
		f.request("tools/call")
		require.NoError(t, s.Close())
		r := <-got
		require.ErrorIs(t, r.err, upstream.ErrClosed)
		require.NotErrorIs(t, r.err, upstream.ErrGone)
		_, err := f.conn.Read(t.Context()) // the session closed its Conn
		assert.ErrorIs(t, err, transport.ErrPeerGone)
	})
}

// TestProgressBeforeTheResult: a call's progress reaches its caller in
// order and all before Call returns, under the token the session chose,
// with the caller's own _meta kept.
func TestProgressBeforeTheResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, f := open(t, upstream.Config{Name: "u"})
		var got []string
		out := make(chan result, 1)
		go func() {
			raw, err := s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"x","_meta":{"k":"v"}}`), progressNotes(func(p json.RawMessage) {
				got = append(got, string(p))
			}))
			out <- result{raw, err}
		}()
		req := f.request("tools/call")
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		require.NoError(t, json.Unmarshal(req.Params, &p))
		assert.JSONEq(t, `"v"`, string(p.Meta["k"]))
		token := string(p.Meta["progressToken"])
		require.NotEmpty(t, token)
		var want []string
		for i := range 3 {
			n := fmt.Sprintf(`{"progressToken":%s,"progress":%d}`, token, i)
			f.notify("notifications/progress", n)
			want = append(want, n)
		}
		f.notify("notifications/progress", `{"progressToken":987654,"progress":1}`) // no such call
		f.answer(req.ID, `{}`)
		r := <-out
		require.NoError(t, r.err)
		assert.Equal(t, want, got)
		assert.Equal(t, int64(1), s.Stats().DroppedProgress)
	})
}

// TestEndlessProgressIsBounded: an upstream that floods a call with
// progress while its caller is stuck costs a bounded buffer; the rest is
// dropped and counted, and the call still gets its result.
func TestEndlessProgressIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, f := open(t, upstream.Config{Name: "u"})
		release := make(chan struct{})
		delivered := 0
		out := make(chan result, 1)
		go func() {
			raw, err := s.Call(t.Context(), "tools/call", nil, progressNotes(func(json.RawMessage) {
				<-release
				delivered++
			}))
			out <- result{raw, err}
		}()
		req := f.request("tools/call")
		var p struct {
			Meta struct {
				Token json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		require.NoError(t, json.Unmarshal(req.Params, &p))
		const flood = 10_000
		for i := range flood {
			f.notify("notifications/progress", fmt.Sprintf(`{"progressToken":%s,"progress":%d}`, p.Meta.Token, i))
		}
		f.answer(req.ID, `{"done":true}`)
		close(release)
		r := <-out
		require.NoError(t, r.err)
		assert.JSONEq(t, `{"done":true}`, string(r.raw))
		assert.Less(t, delivered, 100, "the caller holds a bounded buffer")
		assert.Equal(t, int64(flood-delivered), s.Stats().DroppedProgress)
	})
}

// TestNotificationsQueueIsBounded: while OnNotification is stuck, the
// queue holds MaxQueuedNotifications and the rest is dropped and counted;
// those queued are delivered in order once it returns.
func TestNotificationsQueueIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var got []string
		s, f := open(t, upstream.Config{Name: "u", MaxQueuedNotifications: 4, OnNotification: func(n *transport.Request) {
			<-release
			got = append(got, string(n.Params))
		}})
		for i := range 15 {
			f.notify("notifications/message", fmt.Sprintf(`{"i":%d}`, i))
			if i == 0 {
				synctest.Wait() // the first is in OnNotification's hands
			}
		}
		synctest.Wait()
		assert.Equal(t, int64(10), s.Stats().DroppedNotifications)
		close(release)
		synctest.Wait()
		assert.Equal(t, []string{`{"i":0}`, `{"i":1}`, `{"i":2}`, `{"i":3}`, `{"i":4}`}, got)
	})
}

// TestUpstreamRequests: a request of the upstream reaches OnRequest and
// its answer goes back under its id; one the upstream cancels gets no
// answer; one over MaxIncoming is refused with -32000; ping is answered
// by the session.
func TestUpstreamRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan string, 4)
		s, f := open(t, upstream.Config{Name: "u", MaxIncoming: 1, OnRequest: func(ctx context.Context, req *transport.Request) (json.RawMessage, error) {
			started <- req.ID.String()
			if req.ID.String() == "wait" {
				<-ctx.Done()
				return nil, context.Cause(ctx)
			}
			return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"hi"}}`), nil
		}})
		f.send(&transport.Request{ID: transport.StringID("s1"), Method: "sampling/createMessage", Params: json.RawMessage(`{}`)})
		r := f.response()
		assert.Equal(t, transport.StringID("s1"), r.ID)
		assert.JSONEq(t, `{"role":"assistant","content":{"type":"text","text":"hi"}}`, string(r.Result))
		assert.Equal(t, "s1", <-started)

		f.send(&transport.Request{ID: transport.StringID("wait"), Method: "elicitation/create", Params: json.RawMessage(`{}`)})
		assert.Equal(t, "wait", <-started) // it holds the one slot
		f.send(&transport.Request{ID: transport.Int64ID(3), Method: "roots/list"})
		r = f.response()
		assert.Equal(t, transport.Int64ID(3), r.ID)
		require.NotNil(t, r.Error)
		assert.Equal(t, int64(protocol.CodeServerBusy), r.Error.Code)
		assert.Equal(t, int64(1), s.Stats().RefusedRequests)

		f.notify("notifications/cancelled", `{"requestId":"wait"}`)
		synctest.Wait()
		f.send(&transport.Request{ID: transport.Int64ID(4), Method: "ping"})
		r = f.response() // the cancelled request was not answered: this is ping's
		assert.Equal(t, transport.Int64ID(4), r.ID)
		assert.JSONEq(t, `{}`, string(r.Result))
	})
}

func TestUpstreamRequestRefusedWithoutHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, f := open(t, upstream.Config{Name: "u"})
		f.send(&transport.Request{ID: transport.Int64ID(1), Method: "sampling/createMessage", Params: json.RawMessage(`{}`)})
		r := f.response()
		require.NotNil(t, r.Error)
		assert.Equal(t, int64(protocol.CodeMethodNotFound), r.Error.Code)
	})
}

func TestList(t *testing.T) {
	pages := map[string]string{
		"":   `{"tools":[{"name":"a"},{"name":"b"}],"nextCursor":"p2"}`,
		"p2": `{"tools":[{"name":"c"}],"nextCursor":"p3"}`,
		"p3": `{"tools":[]}`,
	}
	loop := map[string]string{"": `{"tools":[],"nextCursor":"x"}`, "x": `{"tools":[],"nextCursor":"x"}`}
	for _, tc := range []struct {
		name    string
		pages   map[string]string
		max     int
		want    []string
		wantErr string
	}{
		{name: "three pages", pages: pages, max: 10, want: []string{`{"name":"a"}`, `{"name":"b"}`, `{"name":"c"}`}},
		{name: "too many items", pages: pages, max: 2, wantErr: "more than 2 items"},
		{name: "repeated cursor", pages: loop, max: 10, wantErr: `cursor "x" repeated`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, f := open(t, upstream.Config{Name: "u"})
				out := make(chan []json.RawMessage, 1)
				errc := make(chan error, 1)
				go func() {
					items, err := s.List(t.Context(), "tools/list", "tools", tc.max)
					out <- items
					errc <- err
				}()
				for {
					req := f.request("tools/list")
					var p struct{ Cursor string }
					if req.Params != nil {
						require.NoError(t, json.Unmarshal(req.Params, &p))
					}
					f.answer(req.ID, tc.pages[p.Cursor])
					synctest.Wait()
					if len(out) > 0 {
						break
					}
				}
				items, err := <-out, <-errc
				if tc.wantErr != "" {
					require.ErrorContains(t, err, tc.wantErr)
					return
				}
				require.NoError(t, err)
				var got []string
				for _, it := range items {
					got = append(got, string(it))
				}
				assert.Equal(t, tc.want, got)
			})
		})
	}
}

// TestHugeMessageEndsTheSession: a message over the transport's bound
// ends the session with ErrGone (wrapping ErrFrameTooLarge) instead of
// being buffered, and answers the pending call.
func TestHugeMessageEndsTheSession(t *testing.T) {
	upR, sessW := io.Pipe()
	sessR, upW := io.Pipe()
	conn := stdio.New(sessR, sessW, stdio.WithMaxFrameSize(1<<10))
	peer := stdio.New(upR, upW)
	defer func() { _ = peer.Close() }()
	s, f := openOn(t, conn, peer, upstream.Config{Name: "u"})
	defer func() { _ = s.Close() }()
	got := callAsync(t.Context(), s, "tools/call", nil)
	req := f.request("tools/call")
	var wg sync.WaitGroup
	wg.Go(func() { // blocks once the session stops reading; peer.Close ends it
		_ = peer.Write(context.Background(), &transport.Response{ID: req.ID, Result: json.RawMessage(`{"text":"` + strings.Repeat("x", 1<<20) + `"}`)})
	})
	r := <-got
	require.ErrorIs(t, r.err, upstream.ErrGone)
	require.ErrorIs(t, r.err, transport.ErrFrameTooLarge)
	_ = peer.Close()
	wg.Wait()
}

// callerKey marks a caller's context in the tests of OnRequest's context.
type callerKey struct{}

// TestUpstreamRequestOfTheOnlyCall: over a Conn that relates nothing
// (stdio), an upstream request's context is derived from the only call
// in flight, and ends when that call ends, the upstream then answered an
// error; with two calls in flight it belongs to neither.
func TestUpstreamRequestOfTheOnlyCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seen := make(chan any, 2)
		ended := make(chan error, 1)
		s, f := open(t, upstream.Config{Name: "u", OnRequest: func(ctx context.Context, _ *transport.Request) (json.RawMessage, error) {
			seen <- ctx.Value(callerKey{})
			if ctx.Value(callerKey{}) == "first" {
				<-ctx.Done()
				ended <- context.Cause(ctx)
				return nil, context.Cause(ctx)
			}
			return json.RawMessage(`{}`), nil
		}})
		ctx, cancel := context.WithCancelCause(context.WithValue(t.Context(), callerKey{}, "first"))
		first := callAsync(ctx, s, "tools/call", nil)
		f.request("tools/call")
		f.send(&transport.Request{ID: transport.Int64ID(1), Method: "sampling/createMessage", Params: json.RawMessage(`{}`)})
		assert.Equal(t, "first", <-seen)
		cause := errors.New("the caller went")
		cancel(cause)
		var cancelled, refused bool
		for !cancelled || !refused { // in either order
			switch m := f.read().(type) {
			case *transport.Request:
				require.Equal(t, "notifications/cancelled", m.Method)
				cancelled = true
			case *transport.Response:
				require.Equal(t, transport.Int64ID(1), m.ID)
				require.NotNil(t, m.Error, "the request is answered: an upstream left waiting would wait for good")
				assert.Contains(t, m.Error.Message, "ended before its answer")
				refused = true
			}
		}
		require.ErrorIs(t, (<-first).err, cause)
		require.ErrorIs(t, <-ended, cause, "the request ended with its call")

		second := callAsync(context.WithValue(t.Context(), callerKey{}, "second"), s, "tools/call", nil)
		req2 := f.request("tools/call")
		third := callAsync(context.WithValue(t.Context(), callerKey{}, "third"), s, "tools/call", nil)
		req3 := f.request("tools/call")
		f.send(&transport.Request{ID: transport.Int64ID(2), Method: "sampling/createMessage", Params: json.RawMessage(`{}`)})
		assert.Nil(t, <-seen, "two calls in flight: it belongs to neither")
		assert.Equal(t, transport.Int64ID(2), f.response().ID)
		f.answer(req2.ID, `{}`)
		f.answer(req3.ID, `{}`)
		require.NoError(t, (<-second).err)
		require.NoError(t, (<-third).err)
	})
}

// progressNotes returns Notes that take progress only, or nil for nil.
func progressNotes(f func(json.RawMessage)) *upstream.Notes {
	if f == nil {
		return nil
	}
	return &upstream.Notes{Progress: f}
}

// TestLogOfTheCall: a log message sent while a call is the only one in
// flight reaches the call's Notes.Log before Call returns; with two calls
// in flight it goes to OnNotification.
func TestLogOfTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var session []string
		s, f := open(t, upstream.Config{Name: "u", OnNotification: func(n *transport.Request) { session = append(session, string(n.Params)) }})
		var logs []string
		out := make(chan result, 1)
		go func() {
			raw, err := s.Call(t.Context(), "tools/call", nil, &upstream.Notes{Log: func(p json.RawMessage) { logs = append(logs, string(p)) }})
			out <- result{raw, err}
		}()
		req := f.request("tools/call")
		assert.NotContains(t, string(req.Params), "progressToken", "no progress asked")
		f.notify("notifications/message", `{"level":"info","data":"one"}`)
		f.answer(req.ID, `{}`)
		require.NoError(t, (<-out).err)
		assert.Equal(t, []string{`{"level":"info","data":"one"}`}, logs)

		a := callAsync(t.Context(), s, "tools/call", nil)
		ra := f.request("tools/call")
		b := callAsync(t.Context(), s, "tools/call", nil)
		rb := f.request("tools/call")
		f.notify("notifications/message", `{"level":"info","data":"two"}`)
		f.answer(ra.ID, `{}`)
		f.answer(rb.ID, `{}`)
		require.NoError(t, (<-a).err)
		require.NoError(t, (<-b).err)
		synctest.Wait()
		assert.Equal(t, []string{`{"level":"info","data":"two"}`}, session)

		// A call set aside (a listen stream) does not count: the log is
		// the other call's.
		aside := make(chan result, 1)
		go func() {
			raw, err := s.Call(t.Context(), "subscriptions/listen", nil, &upstream.Notes{Aside: true})
			aside <- result{raw, err}
		}()
		rl := f.request("subscriptions/listen")
		logs = nil
		go func() {
			raw, err := s.Call(t.Context(), "tools/call", nil, &upstream.Notes{Log: func(p json.RawMessage) { logs = append(logs, string(p)) }})
			out <- result{raw, err}
		}()
		rc := f.request("tools/call")
		f.notify("notifications/message", `{"level":"info","data":"three"}`)
		f.answer(rc.ID, `{}`)
		require.NoError(t, (<-out).err)
		assert.Equal(t, []string{`{"level":"info","data":"three"}`}, logs)
		f.answer(rl.ID, `{}`)
		require.NoError(t, (<-aside).err)
	})
}

// TestCallerProgressToken: a call carries its caller's progress token
// upstream while no other call in flight carries it; a second call with
// the same token gets the session's own, and each call gets only its own
// progress.
func TestCallerProgressToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, f := open(t, upstream.Config{Name: "u"})
		var mu sync.Mutex
		got := map[string][]string{}
		call := func(name string, out chan<- result) {
			notes := progressNotes(func(p json.RawMessage) {
				mu.Lock()
				got[name] = append(got[name], string(p))
				mu.Unlock()
			})
			notes.ProgressToken = json.RawMessage(`"caller-7"`)
			raw, err := s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"`+name+`"}`), notes)
			out <- result{raw, err}
		}
		tokenOf := func(req *transport.Request) string {
			var p struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			}
			require.NoError(t, json.Unmarshal(req.Params, &p))
			return string(p.Meta["progressToken"])
		}
		out1, out2 := make(chan result, 1), make(chan result, 1)
		go call("a", out1)
		req1 := f.request("tools/call")
		go call("b", out2)
		req2 := f.request("tools/call")
		assert.Equal(t, `"caller-7"`, tokenOf(req1), "the caller's token, passed upstream")
		own := tokenOf(req2)
		assert.NotEqual(t, `"caller-7"`, own, "taken: the session's own")
		f.notify("notifications/progress", `{"progressToken":"caller-7","progress":1}`)
		f.notify("notifications/progress", `{"progressToken":`+own+`,"progress":2}`)
		f.answer(req1.ID, `{}`)
		f.answer(req2.ID, `{}`)
		require.NoError(t, (<-out1).err)
		require.NoError(t, (<-out2).err)
		assert.Equal(t, []string{`{"progressToken":"caller-7","progress":1}`}, got["a"])
		assert.Equal(t, []string{`{"progressToken":` + own + `,"progress":2}`}, got["b"])

		// Free again once the call ended.
		out3 := make(chan result, 1)
		go call("c", out3)
		req3 := f.request("tools/call")
		assert.Equal(t, `"caller-7"`, tokenOf(req3))
		f.answer(req3.ID, `{}`)
		require.NoError(t, (<-out3).err)
	})
}

// TestAbandonedCallKeepsItsMessages: a call whose caller left before the
// answer (an upstream that ignores cancels goes on with it) still counts
// as in flight until its upstream answers it or a bound passes, so that
// its log messages and questions, which over stdio name no call, reach
// no other caller: the issue-67 repro, A cancels, then B calls. Its own
// late questions are refused, its logs dropped.
func TestAbandonedCallKeepsItsMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked := make(chan any, 4)
		s, f := open(t, upstream.Config{Name: "u", OnRequest: func(ctx context.Context, _ *transport.Request) (json.RawMessage, error) {
			asked <- ctx.Value(callerKey{})
			return json.RawMessage(`{"action":"decline"}`), nil
		}})
		var bLogs []string
		bLog := &upstream.Notes{Log: func(p json.RawMessage) { bLogs = append(bLogs, string(p)) }}

		ctxA, cancelA := context.WithCancel(context.WithValue(t.Context(), callerKey{}, "A"))
		a := callAsync(ctxA, s, "tools/call", nil)
		reqA := f.request("tools/call")
		cancelA()
		f.request("notifications/cancelled")
		require.Error(t, (<-a).err)

		b := make(chan result, 1)
		go func() {
			raw, err := s.Call(context.WithValue(t.Context(), callerKey{}, "B"), "tools/call", nil, bLog)
			b <- result{raw, err}
		}()
		reqB := f.request("tools/call")
		f.notify("notifications/message", `{"level":"info","data":"working on A-SECRET-4711"}`)
		f.send(&transport.Request{ID: transport.Int64ID(1), Method: "elicitation/create", Params: json.RawMessage(`{"message":"please confirm: A-SECRET-4711"}`)})
		assert.Nil(t, <-asked, "A's question is asked of no caller")
		f.response()

		f.answer(reqA.ID, `{}`) // the upstream is done with A at last
		synctest.Wait()
		f.notify("notifications/message", `{"level":"info","data":"working on B"}`)
		f.send(&transport.Request{ID: transport.Int64ID(2), Method: "elicitation/create", Params: json.RawMessage(`{"message":"please confirm: B"}`)})
		assert.Equal(t, "B", <-asked, "B alone in flight now: its question")
		f.response()
		f.answer(reqB.ID, `{}`)
		require.NoError(t, (<-b).err)
		assert.Equal(t, []string{`{"level":"info","data":"working on B"}`}, bLogs, "B got its own log, and none of A's")

		// Alone in flight, an abandoned call's question is refused, not
		// asked; once the bound passes, it is no longer waited for.
		ctxC, cancelC := context.WithCancel(context.WithValue(t.Context(), callerKey{}, "C"))
		c := callAsync(ctxC, s, "tools/call", nil)
		f.request("tools/call")
		cancelC()
		f.request("notifications/cancelled")
		require.Error(t, (<-c).err)
		f.send(&transport.Request{ID: transport.Int64ID(3), Method: "elicitation/create", Params: json.RawMessage(`{}`)})
		refused := f.response()
		require.NotNil(t, refused.Error, "refused")
		assert.Contains(t, refused.Error.Message, "cancelled by its caller")
		time.Sleep(31 * time.Second)
		d := make(chan result, 1)
		go func() {
			raw, err := s.Call(context.WithValue(t.Context(), callerKey{}, "D"), "tools/call", nil, nil)
			d <- result{raw, err}
		}()
		reqD := f.request("tools/call")
		f.send(&transport.Request{ID: transport.Int64ID(4), Method: "elicitation/create", Params: json.RawMessage(`{}`)})
		assert.Equal(t, "D", <-asked, "C waited for long enough: D is alone")
		f.response()
		f.answer(reqD.ID, `{}`)
		require.NoError(t, (<-d).err)
		assert.Empty(t, asked)
	})
}

// TestOneOwnerAtATime: on a session that several owners' calls share, a
// call of another owner waits while one owner's calls are in flight (an
// abandoned one included, until the upstream answers it or the bound
// passes), so that what the upstream sends without naming a call reaches
// only that owner; calls of one owner, and Aside ones, do not wait. A
// waiting call ends with its context.
func TestOneOwnerAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, f := open(t, upstream.Config{Name: "u"})
		owned := func(ctx context.Context, owner string) <-chan result {
			out := make(chan result, 1)
			go func() {
				raw, err := s.Call(ctx, "tools/call", nil, &upstream.Notes{Owner: owner})
				out <- result{raw, err}
			}()
			return out
		}
		a1 := owned(t.Context(), "alice")
		r1 := f.request("tools/call")
		a2 := owned(t.Context(), "alice")
		r2 := f.request("tools/call") // alice's second goes at once
		listen := make(chan result, 1)
		go func() {
			raw, err := s.Call(t.Context(), "subscriptions/listen", nil, &upstream.Notes{Aside: true, Owner: "carol"})
			listen <- result{raw, err}
		}()
		rl := f.request("subscriptions/listen") // an Aside call waits for no one
		b := owned(t.Context(), "bob")
		synctest.Wait()
		gaveUp, cancel := context.WithCancel(t.Context())
		b2 := owned(gaveUp, "bob")
		synctest.Wait()
		cancel()
		require.ErrorIs(t, (<-b2).err, context.Canceled, "a waiting call ends with its context")
		f.answer(r1.ID, `{}`)
		require.NoError(t, (<-a1).err)
		synctest.Wait()
		select {
		case <-b:
			t.Fatal("bob's call ran beside alice's")
		default:
		}
		ctxA, cancelA := context.WithCancel(t.Context())
		a3 := owned(ctxA, "alice")
		r3 := f.request("tools/call")
		f.answer(r2.ID, `{}`)
		require.NoError(t, (<-a2).err)
		cancelA() // abandoned: bob still waits, for the upstream's answer or the bound
		f.request("notifications/cancelled")
		require.Error(t, (<-a3).err)
		synctest.Wait()
		select {
		case <-b:
			t.Fatal("bob's call ran beside alice's abandoned one")
		default:
		}
		f.answer(r3.ID, `{}`) // the upstream is done with alice's last
		rb := f.request("tools/call")
		f.answer(rb.ID, `{}`)
		require.NoError(t, (<-b).err)

		ctxA, cancelA = context.WithCancel(t.Context())
		a4 := owned(ctxA, "alice")
		f.request("tools/call")
		cancelA()
		f.request("notifications/cancelled")
		require.Error(t, (<-a4).err)
		b3 := owned(t.Context(), "bob")
		time.Sleep(31 * time.Second) // the upstream never answers alice's: bob waits out the bound
		rb3 := f.request("tools/call")
		f.answer(rb3.ID, `{}`)
		require.NoError(t, (<-b3).err)
		f.answer(rl.ID, `{}`)
		require.NoError(t, (<-listen).err)
	})
}

// TestOneClientRequestOutlivesItsCall: with OneClient, an upstream
// request's context keeps its call's values but not its end, so that the
// client's answer reaches the upstream after the call ended.
func TestOneClientRequestOutlivesItsCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		s, f := open(t, upstream.Config{Name: "u", OneClient: true, OnRequest: func(ctx context.Context, _ *transport.Request) (json.RawMessage, error) {
			<-release
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return json.RawMessage(`{"of":"` + ctx.Value(callerKey{}).(string) + `"}`), nil
		}})
		first := callAsync(context.WithValue(t.Context(), callerKey{}, "first"), s, "tools/call", nil)
		req := f.request("tools/call")
		f.send(&transport.Request{ID: transport.Int64ID(1), Method: "roots/list", Params: json.RawMessage(`{}`)})
		synctest.Wait() // OnRequest waits for release
		f.answer(req.ID, `{}`)
		require.NoError(t, (<-first).err)
		close(release)
		resp := f.response()
		require.Nil(t, resp.Error)
		assert.JSONEq(t, `{"of":"first"}`, string(resp.Result))
	})
}
