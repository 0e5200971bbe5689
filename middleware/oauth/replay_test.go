package oauth

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplayCacheBounded: a full cache of proofs within their window
// refuses a new one (full) rather than forget one; once they expired, it
// makes room.
func TestReplayCacheBounded(t *testing.T) {
	t.Parallel()
	c := newReplayCache(2)
	now := time.Now()
	k := func(b byte) [sha256.Size]byte { return [sha256.Size]byte{b} }
	// use records proof b, of a principal and a key of its own.
	use := func(b byte, at time.Time) replayOutcome {
		return c.use(k(b), fmt.Sprint("p", b), fmt.Sprint("k", b), at, at.Add(time.Minute))
	}
	require.Equal(t, replayFirst, use(1, now))
	require.Equal(t, replayUsed, use(1, now), "seen")
	require.Equal(t, replayFirst, use(2, now))
	require.Equal(t, replayFull, use(3, now))
	assert.Len(t, c.m, 2)
	require.Equal(t, replayFirst, use(3, now.Add(2*time.Minute)))
	assert.Len(t, c.m, 1, "the expired ones swept")
	assert.Len(t, c.held, 2, "the holders of the proof left, and none of those forgotten")

	// Expired proofs are forgotten as new ones come, before the cache is
	// full: a minute of proofs, then another, holds about one minute's.
	c = newReplayCache(1 << 20)
	var d [sha256.Size]byte
	for i := range 2000 {
		at := now
		if i >= 1000 {
			at = now.Add(2 * time.Minute)
		}
		d[0], d[1] = byte(i), byte(i>>8)
		require.Equal(t, replayFirst, c.use(d, "p", "k", at, at.Add(time.Minute)))
	}
	assert.Less(t, len(c.m), 1200, "the first minute's proofs forgotten while the second's came")
	assert.Equal(t, map[replayHolder]int32{c.holderP("p"): int32(len(c.m)), c.holderK("k"): int32(len(c.m))}, c.held)

	e := newDPoPEnv(t, func(d *DPoPConfig) { d.CacheSize = 1 })
	require.Equal(t, http.StatusOK, e.do("DPoP "+e.bound, e.proof(nil)).Code)
	w := e.do("DPoP "+e.bound, e.proof(nil))
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	assert.Equal(t, 1, e.failures(ReasonVerifierBusy))
}

// TestReplayCacheShare: a principal, and a key, holds no more proofs than
// the room left: one alone at most half the cache, whichever of its keys
// it uses, one key at most that whichever principals use it; a holder
// that holds less than the room left is never refused, so when the cache
// is tight only the heaviest are. A holder with no proof left has no
// count.
func TestReplayCacheShare(t *testing.T) {
	t.Parallel()
	const size = 100
	c := newReplayCache(size)
	now := time.Now()
	n := 0
	use := func(principal, key string) replayOutcome {
		n++
		return c.use(sha256.Sum256(fmt.Append(nil, n)), principal, key, now, now.Add(time.Minute))
	}
	// fill records proofs of principal and key until one is refused, and
	// returns how many were recorded and the refusal.
	fill := func(principal, key func(i int) string) (int, replayOutcome) {
		for i := 0; ; i++ {
			if o := use(principal(i), key(i)); o != replayFirst {
				return i, o
			}
		}
	}
	same := func(s string) func(int) string { return func(int) string { return s } }
	each := func(s string) func(int) string { return func(i int) string { return fmt.Sprint(s, i) } }

	held, o := fill(same("mallory"), same("m1"))
	assert.Equal(t, size/2, held, "one principal with one key: half")
	assert.Equal(t, replayShare, o)
	assert.Equal(t, replayShare, use("mallory", "m2"), "another key of the same principal")
	assert.Equal(t, replayFirst, use("alice", "a"), "another principal is not refused")

	// A key many principals use (a gateway's): bounded as one holder.
	held, o = fill(each("user"), same("gateway"))
	const room = size - size/2 - 1
	assert.Equal(t, (room+1)/2, held, "half the room left")
	assert.Equal(t, replayShare, o)
	assert.Equal(t, replayFirst, use("bob", "b"))

	// Tight: mallory (50) and the gateway (25) are refused, every light
	// holder goes in until the last slot.
	for len(c.m) < size {
		require.Equal(t, replayShare, use("mallory", "m1"))
		require.Equal(t, replayShare, use("user0", "gateway"))
		require.Equal(t, replayFirst, use(fmt.Sprint("light", len(c.m)), fmt.Sprint("l", len(c.m))))
	}
	assert.Equal(t, replayFull, use("carol", "c"), "only when no room is left at all is anyone refused")
	assert.LessOrEqual(t, len(c.held), 2*len(c.m))

	// Once their window ended, the proofs and their holders' counts go,
	// a few at each new proof.
	later := now.Add(2 * time.Minute)
	for i := 0; len(c.m) > int(c.held[c.holderP("dave")]); i++ {
		require.Less(t, i, 10*size, "the expired proofs are forgotten as new ones come")
		c.use(sha256.Sum256(fmt.Append(nil, "late", i)), "dave", "d", later, later.Add(time.Minute))
	}
	assert.Equal(t, map[replayHolder]int32{c.holderP("dave"): int32(len(c.m)), c.holderK("d"): int32(len(c.m))}, c.held)
}

// TestReplayCacheConcurrent: proofs recorded and forgotten from many
// goroutines at once, by holders that come and go, leave the counts equal
// to what the cache holds, each holder's at least 1.
func TestReplayCacheConcurrent(t *testing.T) {
	t.Parallel()
	c := newReplayCache(64)
	start := time.Now()
	begin := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			<-begin
			for i := range 500 {
				at := start.Add(time.Duration(i) * time.Second)
				d := sha256.Sum256(fmt.Append(nil, g, i))
				c.use(d, fmt.Sprint("p", i%5), fmt.Sprint("k", g), at, at.Add(time.Duration(i%7)*time.Second))
				if i%3 == 0 {
					c.use(d, "replayer", "r", at, at.Add(time.Second)) // a replay, or a new proof once expired
				}
			}
		})
	}
	close(begin)
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	want := map[replayHolder]int32{}
	for _, e := range c.m {
		want[e.principal]++
		want[e.key]++
	}
	assert.Equal(t, want, c.held)
	assert.LessOrEqual(t, len(c.m), 64)
}

// dpClient is a client of a dpEnv's issuer: a subject, its proof keys and
// a token bound to each.
type dpClient struct {
	keys   []vtKey
	tokens []string
}

// client returns a client of subject with n proof keys.
func (e *dpEnv) client(subject string, n int) *dpClient {
	c := &dpClient{}
	for range n {
		k := vtECKey(e.t, subject)
		jkt := ecThumbprint(k.jwk(e.t))
		c.keys = append(c.keys, k)
		c.tokens = append(c.tokens, vtSign(e.t, e.as, e.is.claims(e.clock.Now(), func(cl jwt.MapClaims) {
			cl["sub"], cl["cnf"] = subject, map[string]any{"jkt": jkt}
		})))
	}
	return c
}

// send presents c's i-th token with a fresh proof of its key dated ahead
// of e's clock, and returns the answer's status.
func (e *dpEnv) send(c *dpClient, i int, ahead time.Duration) int {
	k, tok := c.keys[i], c.tokens[i]
	p := e.proofBy(k, func(h map[string]any, cl jwt.MapClaims) {
		h["jwk"] = k.jwk(e.t)
		cl["ath"] = athOf(tok)
		cl["iat"] = e.clock.Now().Add(ahead).Unix()
	})
	return e.do("DPoP "+tok, p).Code
}

// TestDPoPReplayShare: one principal sending proofs as fast as the server
// takes them, each dated as far ahead as it accepts, from two keys, cannot
// make another principal's valid proof fail. For three minutes, each
// second, mallory sends proofs until one is refused (503 verifier_busy),
// and then alice sends one, which must pass: mallory is refused for
// holding its share of the replay cache, never alice for mallory's. (Alice
// holds a proof a second, 61 within their window, more with those expired
// but not yet forgotten: less than a quarter of the cache, the least room
// one holder ever leaves another.)
func TestDPoPReplayShare(t *testing.T) {
	t.Parallel()
	const size = 512
	e := newDPoPEnv(t, func(d *DPoPConfig) { d.CacheSize = size })
	mallory, alice := e.client("mallory", 2), e.client("alice", 1)

	// The furthest ahead the server takes a proof: a minute before this
	// fix, seconds since.
	ahead := time.Duration(0)
	for _, a := range []time.Duration{59 * time.Second, 30 * time.Second, 10 * time.Second, 5 * time.Second, 0} {
		if e.send(mallory, 0, a) == http.StatusOK {
			ahead = a
			break
		}
	}
	held, busy := 1, 0
	for second := range 180 {
		for i := 0; ; i++ {
			code := e.send(mallory, i%2, ahead)
			if code == http.StatusServiceUnavailable {
				busy++
				break
			}
			require.Equal(t, http.StatusOK, code, "second %d", second)
			held++
			require.Less(t, i, size, "mallory is never refused")
		}
		require.Equal(t, http.StatusOK, e.send(alice, 0, 0), "alice's proof at second %d, after mallory's %d", second, held)
		e.clock.Advance(time.Second)
	}
	assert.Equal(t, 180, busy, "mallory was refused each second")
	assert.Equal(t, 180, e.failures(ReasonVerifierBusy), "each refusal counted")
	t.Logf("mallory (proofs %v ahead) had %d proofs accepted in 180 s, with a cache of %d", ahead, held, size)
}

// BenchmarkReplayCacheUse measures recording a new proof in a cache of
// the default size at a steady state of 500,000 proofs within their
// window (a proof every 120 µs, each held a minute), from a thousand
// principals and keys: a map lookup, the probes, and the counts.
func BenchmarkReplayCacheUse(b *testing.B) {
	const live, every = defaultDPoPCacheSize / 2, 120 * time.Microsecond
	c := newReplayCache(defaultDPoPCacheSize)
	start := time.Now()
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprint("holder", i)
	}
	use := func(i int) replayOutcome {
		at := start.Add(time.Duration(i) * every)
		var d [sha256.Size]byte
		d[0], d[1], d[2], d[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
		return c.use(d, names[i%len(names)], names[(i/7)%len(names)], at, at.Add(live*every))
	}
	for i := range live {
		use(i)
	}
	b.ReportAllocs()
	i := live
	for b.Loop() {
		if use(i) != replayFirst {
			b.Fatal("refused")
		}
		i++
	}
}
