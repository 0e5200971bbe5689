package streamable_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/streamabletest"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// initializeOnly posts an initialize with clientInfo.name name and
// returns the answer's status, body and session id; it does not post
// notifications/initialized.
func (e *rsEnv) initializeOnly(name string) (int, string, string) {
	return e.initializeWith(name, "{}")
}

// initializeWith is initializeOnly with the client's capabilities, caps.
func (e *rsEnv) initializeWith(name, caps string) (int, string, string) {
	e.t.Helper()
	resp := e.do(e.t.Context(), http.MethodPost, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+rsVersion+
		`","capabilities":`+caps+`,"clientInfo":{"name":"`+name+`","version":"1"}}}`, nil)
	body, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	_ = resp.Body.Close()
	return resp.StatusCode, string(body), resp.Header.Get("Mcp-Session-Id")
}

// pingStatus posts a ping on the session and returns the HTTP status.
func (e *rsEnv) pingStatus(sid string) int {
	e.t.Helper()
	resp := e.do(e.t.Context(), http.MethodPost, `{"jsonrpc":"2.0","id":"p","method":"ping"}`, rsSession(sid))
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// A session whose client never posts notifications/initialized expires
// after the init timeout, counted, while an initialized one lives on for
// the idle timeout, or for ever when idle sessions never expire.
func TestUninitializedSessionExpiresFast(t *testing.T) {
	for _, idle := range []time.Duration{time.Hour, 0} {
		t.Run("idle="+idle.String(), func(t *testing.T) {
			cuts, hook := cutRecorder()
			e := newRSEnv(t, server.New(), hook, streamable.WithIdleTimeout(idle), streamable.WithInitTimeout(time.Second))
			ready := e.initialize()
			status, body, abandoned := e.initializeOnly("abandoned")
			require.Equal(t, http.StatusOK, status, body)
			require.NotEmpty(t, abandoned)

			select {
			case c := <-cuts:
				assert.Equal(t, streamable.CutInitTimeout, c)
			case <-time.After(30 * time.Second):
				t.Fatal("the session that never initialized did not expire")
			}
			assert.Equal(t, http.StatusNotFound, e.pingStatus(abandoned))
			e.ping(ready)
		})
	}
}

// In shared mode the record of a session lives for the Endpoint's init
// timeout in Redis until its client initialized, on any replica; then for
// the Endpoint's idle timeout: New hands both to the cluster.
func TestSharedRecordRenewedOnceInitialized(t *testing.T) {
	redis := redistest.Start(t)
	rdb := redis.Client(t)
	store := func(name string) *redisstore.Store {
		st, err := redisstore.New(t.Context(), rdb, redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica(name))
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	timeouts := []streamable.Option{streamable.WithIdleTimeout(time.Hour), streamable.WithInitTimeout(20 * time.Second)}
	a := newRSEnv(t, server.New(), append(timeouts, streamable.WithCluster(replication.Config{Cluster: store("a")}))...)
	b := newRSEnv(t, server.New(), append(timeouts, streamable.WithCluster(replication.Config{Cluster: store("b")}))...)
	status, body, sid := a.initializeOnly("c")
	require.Equal(t, http.StatusOK, status, body)
	key := redisKey(sid, ":s")
	assert.LessOrEqual(t, rdb.PTTL(t.Context(), key).Val(), 20*time.Second, "not initialized yet: the Endpoint's init timeout")
	n := b.do(t.Context(), http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, rsSession(sid))
	_ = n.Body.Close()
	require.Equal(t, http.StatusAccepted, n.StatusCode)
	assert.Greater(t, rdb.PTTL(t.Context(), key).Val(), 59*time.Minute, "initialized on another replica: the Endpoint's idle timeout")
	a.ping(sid)
}

// A shared session whose state is over the cap is not stored: the session
// ends everywhere (its id is unknown from then on), the cut is counted,
// and sessions under the cap are served.
func TestSharedStateOverCapEndsSession(t *testing.T) {
	cluster := streamabletest.NewCluster()
	cuts, hook := cutRecorder()
	e := newRSEnv(t, server.New(), hook, streamable.WithCluster(replication.Config{Cluster: cluster.Replica("a")}), streamable.WithMaxStateBytes(1024))

	// The server keeps what it is sent only bounded (clientInfo strings cut
	// to 256 B; 16 experimental capabilities of at most 256 B each): sixteen
	// of 200 B keep the state over this test's cap of 1 KiB.
	var exp []string
	for i := range 16 {
		exp = append(exp, fmt.Sprintf(`"x%02d":{"v":"%s"}`, i, strings.Repeat("n", 200)))
	}
	_, _, sid := e.initializeWith("n", `{"experimental":{`+strings.Join(exp, ",")+`}}`)
	select {
	case c := <-cuts:
		assert.Equal(t, streamable.CutStateTooLarge, c)
	case <-time.After(30 * time.Second):
		t.Fatal("the state over the cap was not refused")
	}
	if sid != "" {
		assert.Equal(t, http.StatusNotFound, e.pingStatus(sid), "the session ended")
	}

	ok := e.initialize()
	e.ping(ok)
	assert.Equal(t, 1, cluster.Sessions(), "only the session under the cap is in the cluster")
}
