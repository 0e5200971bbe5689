package streamable_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// TestSharedForgeriesHaveNoEffect: what a Redis writer without the cluster
// key publishes or rewrites is refused by the replicas, and does nothing.
// A forged standalone message never reaches the session's GET stream, a
// forged end does not end the session, and a record whose principal was
// moved from another session is an unknown session: 404, never adopted.
func TestSharedForgeriesHaveNoEffect(t *testing.T) {
	redis := redistest.Start(t)
	rdb := redis.Client(t)
	refused := make(chan string, 64)
	replica := func(name string) *htEnv {
		st, err := redisstore.New(t.Context(), rdb, redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica(name),
			redisstore.WithRefusalCounter(func(reason string) { refused <- name + ":" + reason }))
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		require.NoError(t, st.RenewLease(t.Context(), time.Minute))
		return newHTEnv(t, htServer(t), streamable.WithCluster(replication.Config{Cluster: st}))
	}
	a, b, c := replica("a"), replica("b"), replica("c")
	waitRefused := func(want ...string) {
		t.Helper()
		var got []string
		for range want {
			select {
			case r := <-refused:
				got = append(got, r)
			case <-time.After(10 * time.Second):
				t.Fatalf("refused %v, want %v", got, want)
			}
		}
		assert.ElementsMatch(t, want, got)
	}

	sid := a.initialize(`{}`)
	resp := c.send(c.request(t.Context(), http.MethodGet, "", htSession(sid)))
	defer func() { _ = resp.Body.Close() }()
	stream := htStream(t, resp)
	_, msgs := c.call(sid, htCallBody("1", "echo", `{"text":"c follows"}`)) // c's view subscribed
	require.Nil(t, msgs[0].Error)

	// Forged relays, as the session's replicas (a and c) receive them.
	channel := redisKey(sid, ":r")
	forged := func(kind replication.RelayKind, data string) string {
		return string(rune('0'+kind)) + "a\n" + data
	}
	require.NoError(t, rdb.Publish(t.Context(), channel, forged(replication.RelayStandalone,
		`{"jsonrpc":"2.0","id":"forged","method":"elicitation/create","params":{"message":"password?","requestedSchema":{"type":"object"}}}`)).Err())
	require.NoError(t, rdb.Publish(t.Context(), channel, forged(replication.RelayEnd, "")).Err())
	waitRefused("a:unsigned", "a:unsigned", "c:unsigned", "c:unsigned")

	// A genuine message after them: the first on the GET stream.
	require.NoError(t, a.srv.AddTool(server.Tool{Name: "late"}, htCountTool))
	assert.Equal(t, "notifications/tools/list_changed", stream.nextMsg().Method, "the forged elicitation never reached the stream")
	for i, e := range []*htEnv{a, c} {
		_, msgs := e.call(sid, htCallBody(string(rune('2'+i)), "echo", `{"text":"alive"}`))
		require.Len(t, msgs, 1)
		require.Nil(t, msgs[0].Error, "the forged end ended nothing")
	}

	// Another session's sealed principal moved into this record: b, which
	// holds no view, refuses the session.
	other := a.initialize(`{}`)
	record := func(id string) string { return redisKey(id, ":s") }
	require.NoError(t, rdb.HSet(t.Context(), record(sid), "p", rdb.HGet(t.Context(), record(other), "p").Val()).Err())
	r := b.do(http.MethodPost, htCallBody("9", "echo", `{"text":"adopted?"}`), htSession(sid))
	assert.Equal(t, http.StatusNotFound, r.status, "a rewritten record is an unknown session: %s", r.body)
	waitRefused("b:record")
	assert.Empty(t, b.srv.Sessions(), "b adopted nothing")
	require.NoError(t, rdb.HSet(t.Context(), record(other), "p", "").Err()) // a principal in clear
	r = b.do(http.MethodPost, htCallBody("10", "echo", `{"text":"adopted?"}`), htSession(other))
	assert.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
	waitRefused("b:record")
	assert.Empty(t, b.srv.Sessions())
	select {
	case r := <-refused:
		t.Fatalf("an unexpected refusal: %s", r)
	default:
	}
}

// redisKey is the key (or channel) named suffix of session id on Redis:
// the SHA-256 of the id is its hash tag, so Redis never sees the id.
func redisKey(id, suffix string) string {
	sum := sha256.Sum256([]byte("vigil session\n" + id))
	return "vigil:{" + base64.RawURLEncoding.EncodeToString(sum[:]) + "}" + suffix
}
