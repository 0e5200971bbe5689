package main

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// TestSentinelFailover: two vigil replicas on a primary and a replica
// under three Sentinels (the binary of Debian's redis-sentinel). The
// primary is SIGKILLed with calls going on: no vigil replica restarts or
// leaves readiness, calls in sessions they hold go on, new sessions are
// back soon after Sentinel promotes the replica, and every session
// acknowledged before the kill works after it on both replicas, idle ones
// included (the session's writes WAIT for the replica). The old primary
// then comes back empty: the sessions made meanwhile are not lost to it.
func TestSentinelFailover(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	sentinels := redistest.StartSentinels(t, primary, 3, 1, time.Second)
	addrs := make([]string, len(sentinels))
	for i, s := range sentinels {
		addrs[i] = s.Addr()
	}
	url := "redis+sentinel://" + strings.Join(addrs, ",") + "/" + redistest.MasterName
	a, b := startOutageReplica(t, url), startOutageReplica(t, url)
	for _, r := range []*outageReplica{a, b} {
		require.Eventually(t, func() bool { return r.ready() == http.StatusOK }, 10*time.Second, 20*time.Millisecond)
	}
	client := func(r *outageReplica) *chClient {
		return &chClient{t: t, url: "http://" + r.addr + "/mcp", http: http.DefaultClient}
	}
	// Busy sessions, made on a and used on both; idle ones, made on a and
	// never used again before the kill; the last made just before it.
	var busy, idle []string
	for i := range 10 {
		busy = append(busy, client(a).initialize())
		status, ok := client(b).echo(busy[i], i)
		require.True(t, ok, "status %d", status)
	}
	for range 10 {
		idle = append(idle, client(a).initialize())
	}

	// Calls in the busy sessions through both replicas, and readiness,
	// sampled until the end.
	var calls, failed, unready atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			r := []*outageReplica{a, b}[n%2]
			calls.Add(1)
			if _, ok := client(r).echo(busy[n%len(busy)], 1000+n); !ok {
				failed.Add(1)
			}
			if a.ready() != http.StatusOK || b.ready() != http.StatusOK {
				unready.Add(1)
			}
		}
	})
	lastAcked := client(a).initialize()

	old := primary.Addr()
	primary.Kill()
	killed := time.Now()
	var promoted time.Time
	for {
		addr, err := redistest.MasterAddr(t.Context(), sentinels[0])
		if err == nil && addr != old {
			promoted = time.Now()
			require.Equal(t, replica.Addr(), addr)
			break
		}
		require.Less(t, time.Since(killed), 30*time.Second, "no promotion within 30 s")
		time.Sleep(20 * time.Millisecond) // polling Sentinel, as an operator's probe does
	}
	t.Logf("Sentinel promoted the replica %v after the kill", promoted.Sub(killed).Round(time.Millisecond))
	for _, r := range []*outageReplica{a, b} {
		for {
			status, _, _ := r.post("", outageInit)
			if status == http.StatusOK {
				break
			}
			require.Less(t, time.Since(promoted), 10*time.Second, "%s: no new session within 10 s of the promotion", r.addr)
			time.Sleep(20 * time.Millisecond) // polling as a client retrying after Retry-After does
		}
		t.Logf("%s: new sessions %v after the promotion", r.addr, time.Since(promoted).Round(time.Millisecond))
		assert.Less(t, time.Since(promoted), 3*time.Second, "new sessions back within 3 s of the promotion")
	}

	// Every session acknowledged before the kill, on the replica that
	// holds no view of it (b, for the idle ones) and on the other.
	for i, sid := range append(append(append([]string{}, busy...), idle...), lastAcked) {
		for _, r := range []*outageReplica{b, a} {
			status, ok := client(r).echo(sid, 5000+i)
			assert.True(t, ok, "session %d on %s: status %d", i, r.addr, status)
		}
	}

	// The old primary comes back empty, as a master, until Sentinel
	// demotes it: the sessions made meanwhile are on the new primary.
	primary.Restart()
	var after []string
	for range 10 {
		after = append(after, client(b).initialize())
	}
	rc := replica.Client(t)
	require.Eventually(t, func() bool {
		info, err := primary.Client(t).Info(t.Context(), "replication").Result()
		return err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up")
	}, 30*time.Second, 50*time.Millisecond, "Sentinel demotes the old primary")
	for i, sid := range after {
		status, ok := client(a).echo(sid, 9000+i)
		assert.True(t, ok, "session %d made while the old primary was back: status %d", i, status)
	}
	keys, err := rc.Keys(t.Context(), "vigil:*").Result()
	require.NoError(t, err)
	assert.NotEmpty(t, keys)

	close(stop)
	wg.Wait()
	t.Logf("calls in existing sessions: %d of %d ok (%.2f%%); samples with a replica unready: %d",
		calls.Load()-failed.Load(), calls.Load(), 100*float64(calls.Load()-failed.Load())/float64(max(1, calls.Load())), unready.Load())
	assert.GreaterOrEqual(t, float64(calls.Load()-failed.Load()), 0.995*float64(calls.Load()), "≥ 99.5%% of calls ok")
	assert.Zero(t, unready.Load(), "no replica left readiness")
}
