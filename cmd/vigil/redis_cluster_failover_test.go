package main

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// TestClusterFailover: two vigil replicas on a 6-node Redis Cluster (3
// primaries, 3 replicas). The primary holding the first session's slot is
// SIGKILLed with calls going on: no vigil replica restarts or leaves
// readiness, calls in sessions they hold go on, new sessions are back
// soon after the Cluster promotes its replica, and every session
// acknowledged before the kill works after it on both replicas, idle ones
// included (the session's writes WAIT for the replica), and the killed
// primary back empty loses none made after: the Sentinel figures of
// issue 70.
func TestClusterFailover(t *testing.T) {
	nodes := redistest.StartClusterWithReplicas(t, 3, 1)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr()
	}
	url := "redis+cluster://" + strings.Join(addrs, ",")
	a, b := startOutageReplica(t, url), startOutageReplica(t, url)
	for _, r := range []*outageReplica{a, b} {
		require.Eventually(t, func() bool { return r.ready() == http.StatusOK }, 10*time.Second, 20*time.Millisecond)
	}
	client := func(r *outageReplica) *chClient {
		return &chClient{t: t, url: "http://" + r.addr + "/mcp", http: http.DefaultClient}
	}
	var busy, idle []string
	for i := range 10 {
		busy = append(busy, client(a).initialize())
		status, ok := client(b).echo(busy[i], i)
		require.True(t, ok, "status %d", status)
	}
	for range 10 {
		idle = append(idle, client(a).initialize())
	}

	// The primary of the first session's slot, and a node that stays.
	admin := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer func() { _ = admin.Close() }()
	key := "vigil:{" + sessionTag(busy[0]) + "}:s"
	slot, err := admin.ClusterKeySlot(t.Context(), key).Result()
	require.NoError(t, err)
	primary, err := admin.MasterForKey(t.Context(), key)
	require.NoError(t, err)
	old := primary.Options().Addr
	var victim, survivor *redistest.Server
	for _, n := range nodes {
		if n.Addr() == old {
			victim = n
		} else if survivor == nil {
			survivor = n
		}
	}
	require.NotNil(t, victim)
	onVictim := 0
	for _, sid := range append(append([]string{}, busy...), idle...) {
		if m, err := admin.MasterForKey(t.Context(), "vigil:{"+sessionTag(sid)+"}:s"); err == nil && m.Options().Addr == old {
			onVictim++
		}
	}

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

	victim.Kill()
	killed := time.Now()
	sc := survivor.Client(t)
	var promoted time.Time
	var moved []redis.SlotRange // the slots of the killed primary
	for promoted.IsZero() {
		shards, err := sc.ClusterShards(t.Context()).Result()
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if err != nil || r.Start > slot || slot > r.End {
					continue
				}
				for _, n := range sh.Nodes {
					if n.Role == "master" && n.Health == "online" && net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10)) != old {
						promoted, moved = time.Now(), sh.Slots
					}
				}
			}
		}
		require.Less(t, time.Since(killed), 30*time.Second, "no promotion within 30 s")
		time.Sleep(20 * time.Millisecond) // polling the Cluster, as an operator's probe does
	}
	t.Logf("the Cluster promoted the replica %v after the kill (%d of 20 sessions on the killed primary)", promoted.Sub(killed).Round(time.Millisecond), onVictim)
	onMoved := func(sid string) bool {
		s := clusterSlot(sessionTag(sid)) // not asking the Cluster, whose client's map is stale meanwhile
		for _, r := range moved {
			if r.Start <= s && s <= r.End {
				return true
			}
		}
		return false
	}
	for _, r := range []*outageReplica{a, b} {
		// New sessions are back once one whose slot was the killed
		// primary's is made.
		c := client(r)
		for {
			resp, err := c.post(t.Context(), "", outageInit)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if sid := resp.Header.Get("Mcp-Session-Id"); resp.StatusCode == http.StatusOK && onMoved(sid) {
				break
			}
			require.Less(t, time.Since(promoted), 10*time.Second, "%s: no new session within 10 s of the promotion", r.addr)
		}
		t.Logf("%s: new sessions on the promoted primary %v after the promotion", r.addr, time.Since(promoted).Round(time.Millisecond))
		assert.Less(t, time.Since(promoted), 3*time.Second, "new sessions back within 3 s of the promotion")
	}

	for i, sid := range append(append(append([]string{}, busy...), idle...), lastAcked) {
		for _, r := range []*outageReplica{b, a} {
			status, ok := client(r).echo(sid, 5000+i)
			assert.True(t, ok, "session %d on %s: status %d", i, r.addr, status)
		}
	}
	// The killed primary comes back empty (no persistence): the Cluster
	// makes it a replica of the promoted one, and the sessions made
	// meanwhile are not lost to it.
	victim.Restart()
	var after []string
	for range 10 {
		after = append(after, client(b).initialize())
	}
	require.Eventually(t, func() bool {
		info, err := victim.Client(t).Info(t.Context(), "replication").Result()
		return err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up")
	}, 30*time.Second, 50*time.Millisecond, "the Cluster makes the old primary a replica")
	for i, sid := range after {
		status, ok := client(a).echo(sid, 9000+i)
		assert.True(t, ok, "session %d made while the old primary was back: status %d", i, status)
	}

	close(stop)
	wg.Wait()
	t.Logf("calls in existing sessions: %d of %d ok (%.2f%%); samples with a replica unready: %d",
		calls.Load()-failed.Load(), calls.Load(), 100*float64(calls.Load()-failed.Load())/float64(max(1, calls.Load())), unready.Load())
	assert.GreaterOrEqual(t, float64(calls.Load()-failed.Load()), 0.995*float64(calls.Load()), "≥ 99.5%% of calls ok")
	assert.Zero(t, unready.Load(), "no replica left readiness")
}

// sessionTag is the hash tag of a session's keys: the SHA-256 of its id
// (redisstore's).
func sessionTag(sid string) string {
	sum := sha256.Sum256([]byte("vigil session\n" + sid))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// clusterSlot is the Redis Cluster slot of a hash tag: CRC16 (XMODEM)
// modulo 16384.
func clusterSlot(tag string) int64 {
	var crc uint16
	for i := range len(tag) {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int64(crc) % 16384
}
