package streamable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// fwSeen is what the handler of forwarded requests saw of one.
type fwSeen struct {
	host, remote string
	path         string
	header       http.Header
	assertion    string // what the restore hook was given, from the context
}

type fwAssertionKey struct{}

// fwGuard stands in for an authorization guard (streamable.WithGuard): it
// asserts the X-Test-User of a request it forwards, restores it in the
// forwarded request's context, and, with seen, tells what reaches the
// Endpoint it guards of a forwarded request.
type fwGuard struct{ seen chan<- fwSeen }

func (g fwGuard) Wrap(next http.Handler) http.Handler {
	if g.seen == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := r.Context().Value(fwAssertionKey{}).(string)
		g.seen <- fwSeen{host: r.Host, remote: r.RemoteAddr, path: r.URL.Path, header: r.Header.Clone(), assertion: got}
		next.ServeHTTP(w, r)
	})
}

func (fwGuard) CheckMessage(http.ResponseWriter, *http.Request, transport.Message) bool { return true }

func (fwGuard) AssertPrincipal(r *http.Request) []byte {
	return []byte("principal of " + r.Header.Get("X-Test-User"))
}

func (fwGuard) RestorePrincipal(ctx context.Context, assertion []byte) context.Context {
	return context.WithValue(ctx, fwAssertionKey{}, string(assertion))
}

// onPublicAddress serves e's Endpoint as a listener on a non-loopback
// address would (the address a load balancer reaches a replica on): its
// Host check lets any name through there.
func onPublicAddress(t *testing.T, e *htEnv) {
	t.Helper()
	public := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 8080}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, public)))
	}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	e.ts, e.client = ts, ts.Client()
}

// TestSharedTaskForwardedWithoutCredentials: a task request reaching
// replica b, on a public address with a real Host name, is forwarded to the
// task's replica a without Authorization, Cookie, Proxy-Authorization,
// Origin or any header the Endpoint does not read; it carries instead what
// b's assert hook made of it, which a's restore hook puts in its context,
// and reaches a's guard at the path the client sent it to (a gateway
// catalog's endpoint, whose scopes the guard asks).
// On a, whose listener is loopback, it passes the Host and Origin checks it
// passed on b (it was 403), while a request sent to a itself with that Host
// is still refused. On Redis, no message on the cluster's channels holds
// the credentials, nor (relays being sealed) the request or the assertion.
func TestSharedTaskForwardedWithoutCredentials(t *testing.T) {
	shEach(t, func(t *testing.T, be shBackend) {
		release := make(chan struct{})
		defer close(release)
		seen := make(chan fwSeen, 4)
		a := newSHTaskReplica(t, be, "a", 0, release, streamable.WithGuard(fwGuard{seen: seen}))
		b := newSHTaskReplica(t, be, "b", 0, release, streamable.WithGuard(fwGuard{}))
		onPublicAddress(t, b.env)

		sid := a.env.initialize(`{}`)
		_, msgs := a.env.call(sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"report","task":{"ttl":60000}}}`)
		require.Len(t, msgs, 1)
		require.Nil(t, msgs[0].Error, "%s", msgs[0].Error)
		var created taskStatus
		require.NoError(t, json.Unmarshal(msgs[0].Result, &created))
		require.NotNil(t, created.Task)
		id := created.Task.TaskID

		var scan func() []string
		if be.redis != nil {
			// From now on: a subscriber counts as a replica that never
			// confirms a session's new state, which slows its changes.
			scan = psubscribe(t, be)
		}
		get := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":%q}}`, id)
		hdr := htSession(sid)
		for k, v := range map[string]string{
			"Host": "mcp.example.test", "Origin": "https://mcp.example.test",
			"Authorization": "Bearer secret-token", "Cookie": "sid=secret-cookie", "Proxy-Authorization": "Basic c2VjcmV0",
			"X-Test-User": "alice", "Traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		} {
			hdr[k] = v
		}
		req := b.env.request(t.Context(), http.MethodPost, get, hdr)
		req.URL.Path = "/mcp/notes"
		r := b.env.doReq(req)
		require.Equal(t, http.StatusOK, r.status, "tasks/get on b, forwarded to a: %s", r.body)
		msgs = r.messages(t)
		require.Len(t, msgs, 1)
		require.Nil(t, msgs[0].Error, "%s", msgs[0].Error)
		var st taskStatus
		require.NoError(t, json.Unmarshal(msgs[0].Result, &st))
		assert.Equal(t, "working", st.Status)

		fw := <-seen
		assert.Equal(t, "mcp.example.test", fw.host, "the client's Host")
		assert.Equal(t, "/mcp/notes", fw.path, "the path the client sent it to")
		assert.Equal(t, "principal of alice", fw.assertion, "b's assertion, restored on a")
		host, _, err := net.SplitHostPort(fw.remote)
		require.NoError(t, err, "the client's address: %q", fw.remote)
		assert.Equal(t, "127.0.0.1", host, "the client's address, as b saw it")
		for _, k := range []string{"Authorization", "Cookie", "Proxy-Authorization", "Origin", "X-Test-User"} {
			assert.NotContains(t, fw.header, k, "forwarded headers: %v", fw.header)
		}
		assert.Equal(t, sid, fw.header.Get("Mcp-Session-Id"))
		assert.Equal(t, htVersion, fw.header.Get("Mcp-Protocol-Version"))
		assert.Equal(t, "application/json", fw.header.Get("Content-Type"))
		assert.NotEmpty(t, fw.header.Get("Accept"))
		assert.Equal(t, hdr["Traceparent"], fw.header.Get("Traceparent"), "the trace context goes on")

		// The checks still hold for what is not forwarded.
		direct := a.env.do(http.MethodPost, get, hdr)
		assert.Equal(t, http.StatusForbidden, direct.status, "a's own request with a foreign Host: %s", direct.body)
		assert.Empty(t, seen)

		if scan != nil {
			msgs := scan()
			require.NotEmpty(t, msgs, "the forwarded request went through Redis")
			for _, m := range msgs {
				// The assertion went through Redis (a's guard saw it), sealed.
				for _, secret := range []string{"secret-token", "Bearer", "Authorization", "Cookie", "secret-cookie", "c2VjcmV0", "principal of alice", "cHJpbmNpcGFsIG9mIGFsaWNl", "tasks/get"} {
					assert.NotContains(t, m, secret, "a message on Redis")
				}
			}
		}
	})
}

// psubscribe subscribes to every channel of be's Redis (vigil:*) until the
// test ends; scan returns every message published there so far, once a
// marker published after them came back.
func psubscribe(t *testing.T, be shBackend) (scan func() []string) {
	t.Helper()
	client := be.redis.Client(t)
	ps := client.PSubscribe(t.Context(), "vigil:*")
	t.Cleanup(func() { _ = ps.Close() })
	_, err := ps.Receive(t.Context()) // the subscription is in place
	require.NoError(t, err)
	ch := ps.Channel()
	return func() []string {
		t.Helper()
		const marker = "end of the scan"
		require.NoError(t, client.Publish(t.Context(), "vigil:test-marker", marker).Err())
		var msgs []string
		for m := range ch {
			if m.Channel == "vigil:test-marker" && m.Payload == marker {
				return msgs
			}
			msgs = append(msgs, m.Payload)
		}
		t.Fatal("the subscription ended")
		return nil
	}
}
