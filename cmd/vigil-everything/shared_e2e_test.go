package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/nginxtest"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// startShared starts n vigil-everything -redis replicas on one real
// redis-server as the shared deploy kits run it (TLS only, an ACL user
// with a password: redistest.StartTLS), sharing VIGIL_REQUEST_STATE_KEY
// and VIGIL_CLUSTER_KEY as replicas behind one load balancer must, behind a real nginx doing
// round robin with no session affinity, and returns the MCP URL of the
// proxy. At the end, Redis's ACL log must be empty, and Redis must have
// learned nothing (redisLearnedNothing).
func startShared(t *testing.T, n int) string {
	t.Helper()
	redis := redistest.StartTLS(t)
	admin := redis.Client(t)
	spy := admin.PSubscribe(t.Context(), "*")
	_, err := spy.Receive(t.Context()) // subscribed
	require.NoError(t, err)
	published := spy.Channel(goredis.WithChannelSize(1 << 16))
	t.Cleanup(func() { // after the replicas stopped
		entries, err := admin.Do(context.Background(), "ACL", "LOG").Slice()
		require.NoError(t, err)
		assert.Empty(t, entries, "no command, key or channel of Vigil is denied to its ACL user")
		redisLearnedNothing(t, admin, published)
		_ = spy.Close()
	})
	var key [32]byte
	_, _ = rand.Read(key[:])
	env := []string{
		"VIGIL_REQUEST_STATE_KEY=" + base64.StdEncoding.EncodeToString(key[:]),
		"VIGIL_CLUSTER_KEY=" + base64.StdEncoding.EncodeToString(redistest.ClusterKey()),
		"VIGIL_REDIS_URL=" + redis.URL(), "VIGIL_REDIS_PASSWORD=" + redis.Password(),
	}
	var upstreams []string
	for range n {
		u := startHTTPWith(t, env, "-http", "127.0.0.1:0", "-redis-ca", redis.CAFile())
		hostport := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
		upstreams = append(upstreams, strings.Replace(hostport, "localhost", "127.0.0.1", 1))
	}
	return nginxtest.Start(t, upstreams...).URL() + "/mcp"
}

// TestConformanceShared runs both lines of the official conformance suite,
// every scenario, through nginx round robin over three replicas whose
// sessions are shared on TLS Redis with an ACL user: each request of a session may reach any
// replica (the answer to an elicitation another replica asked, a resumed
// stream another replica stored, a task another replica runs), and every
// check must pass, as against one server. Meanwhile Redis learns nothing
// (redisLearnedNothing).
func TestConformanceShared(t *testing.T) {
	node := conformanceNode(t)
	runConformance(t, node, startShared(t, 3))
}

// TestInteropTypeScriptShared drives the same three replicas behind nginx
// with the official TypeScript SDK client over Streamable HTTP: the
// everything script (tools of every content type, resources with a
// subscription, prompts, completion, logging levels, progress, and
// sampling, elicitation and roots round trips), each of its requests
// landing on whichever replica nginx picks.
func TestInteropTypeScriptShared(t *testing.T) {
	node := requireNodeHarness(t, interopDir)
	url := startShared(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	client := exec.CommandContext(ctx, node, "everything-client.mjs", url)
	client.Dir = interopDir
	client.WaitDelay = 5 * time.Second
	out, err := client.CombinedOutput()
	t.Logf("TypeScript client output:\n%s", out)
	require.NoError(t, ctx.Err(), "TypeScript client timed out:\n%s", out)
	require.NoError(t, err, "TypeScript client failed:\n%s", out)
}

// The names Redis may see: a session's keys and channel by the SHA-256 of
// its id, its streams and claims by the SHA-256 of their names, a
// caller's keys by its HMAC under the cluster key (43 base64url
// characters each), a used requestState by a digest of it (32 hex
// digits), and the replicas' leases by their names.
var (
	learnedKey = regexp.MustCompile(`^(vigil:\{` + tag + `\}:(s|es|eb|e:` + tag + `|claim:` + tag + `)` +
		`|vigil:sessions:` + tag + `|rate:vigil:` + tag + `|vigil:state:[0-9a-f]{32}|vigil:replica:\S+)$`)
	learnedChannel = regexp.MustCompile(`^vigil:\{` + tag + `\}:r$`)
	pseudonym      = regexp.MustCompile(`^` + tag + `$`)
	// readable is a run of text: in 24 random bytes, one chance in 10^10.
	readable = regexp.MustCompile(`[\x20-\x7e]{24,}`)
)

// tag is a SHA-256 or HMAC-SHA256 in base64url.
const tag = `[A-Za-z0-9_-]{43}`

// redisLearnedNothing reads Redis as someone with read-only access to it
// would, once the replicas ran: every key (SCAN), every field, member and
// value of each, and every message published meanwhile. Key names,
// channels, a record's fields and the members of sets carry hashes or
// fixed names only (no session id, subject, client id, address, request
// id or requestState), and no value or message holds readable text (no
// token, request, answer, result or user content).
func redisLearnedNothing(t *testing.T, rdb *goredis.Client, published <-chan *goredis.Message) {
	t.Helper()
	ctx := context.Background()
	const end = "end of the scan"
	require.NoError(t, rdb.Publish(ctx, "test-marker", end).Err())
	messages := 0
	for m := range published {
		if m.Channel == "test-marker" && m.Payload == end {
			break
		}
		messages++
		assert.Regexp(t, learnedChannel, m.Channel)
		assert.NotRegexp(t, readable, m.Payload, "a message on %s", m.Channel)
	}
	assert.Positive(t, messages, "the replicas relayed through Redis")
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	kinds := map[string]int{}
	for iter.Next(ctx) {
		k := iter.Val()
		assert.Regexp(t, learnedKey, k)
		kind := rdb.Type(ctx, k).Val()
		kinds[kind]++
		if strings.HasPrefix(k, "vigil:state:") {
			kinds["requestState"]++
		}
		var held []string
		switch kind {
		case "string":
			held = []string{rdb.Get(ctx, k).Val()}
		case "hash": // a session's record: its principal and state, sealed
			for f, v := range rdb.HGetAll(ctx, k).Val() {
				assert.Contains(t, []string{"p", "st"}, f, "a field of %s", k)
				held = append(held, v)
			}
		case "set": // a session's streams: the tags of their names
			for _, v := range rdb.SMembers(ctx, k).Val() {
				assert.Regexp(t, pseudonym, v, "in %s", k)
			}
		case "zset": // a caller's session quota: the sessions' pseudonyms
			for _, v := range rdb.ZRange(ctx, k, 0, -1).Val() {
				assert.Regexp(t, pseudonym, v, "in %s", k)
			}
		case "stream":
			for _, e := range rdb.XRange(ctx, k, "-", "+").Val() {
				for f, v := range e.Values {
					assert.Equal(t, "d", f, "a field of %s", k)
					held = append(held, v.(string))
				}
			}
		default:
			t.Errorf("%s is a %s: no key of Vigil's is", k, kind)
		}
		for _, v := range held {
			assert.NotRegexp(t, readable, v, "in %s", k)
		}
	}
	require.NoError(t, iter.Err())
	t.Logf("Redis learned nothing from %d messages and %v keys", messages, kinds)
	for _, kind := range []string{"hash", "set", "stream", "string"} {
		assert.Positive(t, kinds[kind], "Redis held a %s of Vigil's (records, streams, events, leases): %v", kind, kinds)
	}
}
