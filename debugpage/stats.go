package debugpage

import (
	"errors"
	"math"
	"math/bits"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Sizes of the per-method/tool statistics of the live page. Everything is
// allocated up front per key (at most statsMaxKeys of them, then "other";
// only names the server knows are keys), so the memory is bounded by
// statsBoundBytes.
const (
	statsMaxKeys     = 256           // method/tool keys, besides "other"
	statsHistBuckets = 56            // log-spaced latency buckets (two per octave, 1 µs .. 275 s)
	statsSeconds     = 600           // one-second buckets of the 10-minute charts
	statsKeySlot     = 5             // seconds per bucket of a key's last-minute ring
	statsKeySlots    = 60/5 + 1      // the last minute, and the bucket being filled
	statsOtherKey    = "other"       // where keys beyond statsMaxKeys (and unknown tools) go
	statsToolPrefix  = "tools/call " // a tools/call's key is "tools/call NAME"
)

// statSlot is how a request ended, as the debug page counts it. Exactly one
// slot per request.
type statSlot uint8

const (
	slotOK        statSlot = iota
	slotToolError          // a tools/call answered with isError set
	slotError              // answered with a JSON-RPC error
	// slotInvalidArguments: a tools/call answered with isError set because
	// its arguments do not match the tool's input schema (the metrics'
	// error_type invalid_arguments).
	slotInvalidArguments
	// slotCancel+i: cancelled, by cause (protocol.CancelReason-1: client_cancel,
	// transport_close, stream_close, shutdown, timeout, upstream_closed,
	// other).
	slotCancel
	// slotDrop+i: the response was not written, by reason
	// (protocol.DropReason-1: cancelled, writer_closed, peer_gone, shutdown).
	slotDrop = slotCancel + 7
	// slotDenied: answered with the error of a tool policy's denial
	// (package middleware/policy), an error the caller's authorization
	// caused.
	slotDenied = slotDrop + 4
	// slotErrorTimeout and slotErrorUpstream: answered with the error of a
	// handler that ran out of time (-32001) or whose upstream went away
	// (server.ErrUpstreamClosed): outcome error, as the metrics, the span
	// and the log line say, with the cause they count too.
	slotErrorTimeout  = slotDenied + 1
	slotErrorUpstream = slotDenied + 2
	slotCount         = slotDenied + 3
)

// slotNames names each slot, as the page and its JSON show them.
var slotNames = [slotCount]string{
	"ok", "tool_error", "error", "invalid_arguments",
	"cancelled:client_cancel", "cancelled:transport_close", "cancelled:stream_close", "cancelled:shutdown", "cancelled:timeout", "cancelled:upstream_closed", "cancelled:other",
	"dropped:cancelled", "dropped:writer_closed", "dropped:peer_gone", "dropped:shutdown",
	"denied", "error:timeout", "error:upstream_closed",
}

// slotColors are the chart colors of each slot.
var slotColors = [slotCount]string{
	"#4caf50", "#ff9800", "#d32f2f", "#ffb74d",
	"#1e88e5", "#5e35b1", "#7986cb", "#8d6e63", "#00897b", "#c0ca33", "#9e9e9e",
	"#f06292", "#ad1457", "#6d4c41", "#424242",
	"#b71c1c", "#e57373", "#c62828",
}

// statsOutcomeOf returns the slot of a request's outcome: cancelled (with its
// cause) before dropped before error before ok, as the metrics decide.
func statsOutcomeOf(out server.Outcome) statSlot {
	switch {
	case out.Cause != nil:
		return cancelSlot(server.ReasonOfCause(out.Cause))
	case out.Dropped != protocol.DropNone:
		if r := int(out.Dropped); r >= 1 && r <= 4 {
			return slotDrop + statSlot(r-1)
		}
		return slotDrop + 1
	case out.Err != nil:
		switch server.ReasonOfCause(out.Err) {
		case protocol.ReasonTimeout:
			return slotErrorTimeout
		case protocol.ReasonUpstreamClosed:
			return slotErrorUpstream
		}
		if _, denied := errors.AsType[*mcpconv.PolicyDenied](out.Err); denied {
			return slotDenied
		}
		return slotError
	}
	if out.InvalidArguments() {
		return slotInvalidArguments
	}
	if out.ToolError() {
		return slotToolError
	}
	return slotOK
}

func cancelSlot(r protocol.CancelReason) statSlot {
	if r < protocol.ReasonClientCancel || r > protocol.ReasonOther {
		r = protocol.ReasonOther
	}
	return slotCancel + statSlot(r-protocol.ReasonClientCancel)
}

// statBucket counts the requests of one period: by slot, their summed
// duration, and a latency histogram. Its fields are atomics: recording
// takes no lock (but for the rare reset of a bucket to a new period).
type statBucket struct {
	period atomic.Int64 // the period held (seconds since the epoch / width); 0: never used
	n      [slotCount]atomic.Uint64
	sumNS  atomic.Uint64
	hist   [statsHistBuckets]atomic.Uint64
}

func (b *statBucket) add(s statSlot, ns int64, h int) {
	b.n[s].Add(1)
	b.sumNS.Add(uint64(ns))
	b.hist[h].Add(1)
}

// reset zeroes b for period p, unless someone already did. mu serializes
// resets; writers that read b.period == p after the Store see zeroes.
func (b *statBucket) reset(mu *sync.Mutex, p int64) {
	mu.Lock()
	if b.period.Load() != p {
		for i := range b.n {
			b.n[i].Store(0)
		}
		b.sumNS.Store(0)
		for i := range b.hist {
			b.hist[i].Store(0)
		}
		b.period.Store(p)
	}
	mu.Unlock()
}

// statRing is a ring of buckets of width seconds each.
type statRing struct {
	width   int64
	mu      sync.Mutex // held only to reset a bucket to a new period
	buckets []statBucket
}

func (r *statRing) add(unix int64, s statSlot, ns int64, h int) {
	p := unix / r.width
	b := &r.buckets[p%int64(len(r.buckets))]
	if b.period.Load() != p {
		b.reset(&r.mu, p)
	}
	b.add(s, ns, h)
}

// keyStats are one method/tool's counts: since start, and the last minute.
type keyStats struct {
	key    string
	total  statBucket
	recent statRing
}

// statsKey identifies a key without building its string on the hot path.
type statsKey struct{ method, tool string }

// requestStats counts every request by method/tool, outcome and latency
// for the live page: since start and over the last minute per key, and
// over the last ten minutes, second by second, for all keys together. Its
// memory is fixed per key and bounded (statsBoundBytes). record takes no
// lock on its path but to add a new key or to start a new period of a
// bucket, and allocates nothing. It is safe for concurrent use.
type requestStats struct {
	started time.Time
	keys    atomic.Pointer[map[statsKey]*keyStats] // copy on write
	mu      sync.Mutex                             // held to add a key
	nkeys   int                                    // keys added, besides other; mu
	other   *keyStats
	global  statRing // statsSeconds buckets of one second
}

func newRequestStats(now time.Time) *requestStats {
	s := &requestStats{
		started: now,
		global:  statRing{width: 1, buckets: make([]statBucket, statsSeconds)},
	}
	s.other = newKeyStats(statsOtherKey)
	m := map[statsKey]*keyStats{}
	s.keys.Store(&m)
	return s
}

func newKeyStats(key string) *keyStats {
	return &keyStats{key: key, recent: statRing{width: statsKeySlot, buckets: make([]statBucket, statsKeySlots)}}
}

// recordRequest counts req, a request (not a notification) that ended
// with out, of the server that lent hook (nil: none): the Observer's
// RequestEnded, which the server calls for every request, those the chain
// refuses (busy, timeouts) too. A request counts under its name only if
// its session's server knows it (a method of its table, a registered
// tool): names a client made up count as "other", so that they never take
// the place of a real one.
func (s *requestStats) recordRequest(hook *serverhook.Server, req *server.Request, out server.Outcome) {
	now := out.Ended
	start := req.Received
	if start.IsZero() {
		start = now
	}
	var srv *server.Server
	if req.Session != nil && hook != nil {
		srv = req.Session.Server()
	}
	k := statsKey{method: req.Method}
	known := srv != nil
	if k.method == "tools/call" {
		k.tool = req.Name
		if known = known && k.tool != ""; known {
			_, known = srv.Tool(k.tool)
		}
	}
	ks := s.other
	if known {
		ks = s.lookupKnown(k, hook.HasMethod)
	}
	s.add(ks, statsOutcomeOf(out), now.Sub(start), now)
}

// record counts one request of method (and tool, for a tools/call; known:
// the server knows them, else it counts as "other") that ended in slot
// after d, at now.
func (s *requestStats) record(method, tool string, known bool, slot statSlot, d time.Duration, now time.Time) {
	ks := s.other
	if known {
		ks = s.lookup(statsKey{method, tool})
	}
	s.add(ks, slot, d, now)
}

// add counts one request of ks that ended in slot after d, at now.
func (s *requestStats) add(ks *keyStats, slot statSlot, d time.Duration, now time.Time) {
	ns := max(int64(d), 0)
	h := histIndex(ns)
	unix := now.Unix()
	ks.total.add(slot, ns, h)
	ks.recent.add(unix, slot, ns, h)
	s.global.add(unix, slot, ns, h)
}

// lookupKnown returns k's stats when k is counted already, else, if
// hasMethod knows k's method, those lookup adds (so that the method table
// is asked only on a key's first request).
func (s *requestStats) lookupKnown(k statsKey, hasMethod func(string) bool) *keyStats {
	if ks, ok := (*s.keys.Load())[k]; ok {
		return ks
	}
	if !hasMethod(k.method) {
		return s.other
	}
	return s.lookup(k)
}

func (s *requestStats) lookup(k statsKey) *keyStats {
	if ks, ok := (*s.keys.Load())[k]; ok {
		return ks
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.keys.Load()
	if ks, ok := old[k]; ok {
		return ks
	}
	if s.nkeys >= statsMaxKeys {
		return s.other
	}
	k = statsKey{strings.Clone(k.method), strings.Clone(k.tool)} // not a part of a request's memory
	name := k.method
	if k.tool != "" {
		name = statsToolPrefix + k.tool
	}
	ks := newKeyStats(name)
	m := make(map[statsKey]*keyStats, len(old)+1)
	for kk, v := range old {
		m[kk] = v
	}
	m[k] = ks
	s.nkeys++
	s.keys.Store(&m)
	return ks
}

// histIndex returns the latency bucket of ns: 0 below 1024 ns (~1 µs),
// then two buckets per octave (the lower at 2^k, the upper at 1.5·2^k),
// the last one open-ended.
func histIndex(ns int64) int {
	if ns < 1024 {
		return 0
	}
	b := bits.Len64(uint64(ns)) // ns in [2^(b-1), 2^b)
	half := int(ns>>(b-2)) & 1
	return min(1+(b-11)*2+half, statsHistBuckets-1)
}

// histBounds returns the lower and upper bounds of bucket i, in ns; the
// last bucket's upper bound is its lower.
func histBounds(i int) (lo, hi float64) {
	if i == 0 {
		return 0, 1024
	}
	b := (i-1)/2 + 11
	base := math.Ldexp(1, b-1)
	if (i-1)%2 == 0 {
		lo, hi = base, 1.5*base
	} else {
		lo, hi = 1.5*base, 2*base
	}
	if i == statsHistBuckets-1 {
		hi = lo
	}
	return lo, hi
}

// statsKeyExtraBytes bounds what a key holds besides its keyStats and
// ring: its map entry (room for growth included), the strings of its
// statsKey and its name. Keys are names the server knows: a method of its
// table, or a tool, whose name has at most 128 bytes.
const statsKeyExtraBytes = 512

// statsBoundBytes is the most memory requestStats holds: its global ring,
// and statsMaxKeys+1 keys, each its total and last-minute ring, and the
// map entries.
func statsBoundBytes() int64 {
	bucket := int64(unsafe.Sizeof(statBucket{}))
	perKey := int64(unsafe.Sizeof(keyStats{})) + bucket*statsKeySlots + statsKeyExtraBytes
	return bucket*statsSeconds + perKey*(statsMaxKeys+1) + int64(unsafe.Sizeof(requestStats{}))
}

// statsInUseBytes is what s holds now (its keys are allocated when first
// seen).
func (s *requestStats) statsInUseBytes() int64 {
	bucket := int64(unsafe.Sizeof(statBucket{}))
	perKey := int64(unsafe.Sizeof(keyStats{})) + bucket*statsKeySlots + statsKeyExtraBytes
	return bucket*statsSeconds + perKey*int64(len(*s.keys.Load())+1) + int64(unsafe.Sizeof(requestStats{}))
}

// histogram is a read copy of a bucket (or of a sum of buckets).
type histogram struct {
	n     [slotCount]uint64
	sumNS uint64
	hist  [statsHistBuckets]uint64
}

func (h *histogram) addBucket(b *statBucket) {
	for i := range b.n {
		h.n[i] += b.n[i].Load()
	}
	h.sumNS += b.sumNS.Load()
	for i := range b.hist {
		h.hist[i] += b.hist[i].Load()
	}
}

func (h *histogram) count() uint64 {
	var c uint64
	for _, v := range h.n {
		c += v
	}
	return c
}

// quantile returns the q-quantile of the latencies, in ms, interpolated
// within its bucket; 0 with no sample.
func (h *histogram) quantile(q float64) float64 {
	var total uint64
	for _, v := range h.hist {
		total += v
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var cum float64
	for i, v := range h.hist {
		if v == 0 {
			continue
		}
		if cum+float64(v) >= rank {
			lo, hi := histBounds(i)
			frac := (rank - cum) / float64(v)
			return (lo + (hi-lo)*frac) / 1e6
		}
		cum += float64(v)
	}
	lo, _ := histBounds(statsHistBuckets - 1)
	return lo / 1e6
}

// statCounts are the counts of a key over a period, as the page shows them.
type statCounts struct {
	Requests   uint64            `json:"requests"`
	RatePerSec float64           `json:"rate_per_sec"`
	OK         uint64            `json:"ok"`
	Errors     uint64            `json:"errors"` // JSON-RPC errors and tool errors (isError)
	ToolErrors uint64            `json:"tool_errors"`
	Cancelled  uint64            `json:"cancelled"`
	Dropped    uint64            `json:"dropped"`
	P50MS      float64           `json:"p50_ms"`
	P95MS      float64           `json:"p95_ms"`
	P99MS      float64           `json:"p99_ms"`
	MeanMS     float64           `json:"mean_ms"`
	ByOutcome  map[string]uint64 `json:"by_outcome,omitempty"` // slot name: count, non-zero only
}

func countsOf(h *histogram, seconds float64) statCounts {
	c := statCounts{
		Requests:   h.count(),
		OK:         h.n[slotOK],
		ToolErrors: h.n[slotToolError] + h.n[slotInvalidArguments],
		Errors:     h.n[slotError] + h.n[slotToolError] + h.n[slotInvalidArguments] + h.n[slotDenied] + h.n[slotErrorTimeout] + h.n[slotErrorUpstream],
		P50MS:      h.quantile(0.50),
		P95MS:      h.quantile(0.95),
		P99MS:      h.quantile(0.99),
	}
	for i := slotCancel; i < slotDrop; i++ {
		c.Cancelled += h.n[i]
	}
	for i := slotDrop; i < slotDenied; i++ {
		c.Dropped += h.n[i]
	}
	if seconds > 0 {
		c.RatePerSec = float64(c.Requests) / seconds
	}
	if c.Requests > 0 {
		c.MeanMS = float64(h.sumNS) / float64(c.Requests) / 1e6
	}
	for i, v := range h.n {
		if v > 0 {
			if c.ByOutcome == nil {
				c.ByOutcome = map[string]uint64{}
			}
			c.ByOutcome[slotNames[i]] = v
		}
	}
	return c
}

// keyRow is one method/tool of the page's table.
type keyRow struct {
	Key    string     `json:"key"` // method, or "tools/call NAME", or "other"
	Minute statCounts `json:"last_minute"`
	Total  statCounts `json:"since_start"`
}

// rows returns every key's counts, as of now, in key order.
func (s *requestStats) rows(now time.Time) []keyRow {
	keys := *s.keys.Load()
	all := make([]*keyStats, 0, len(keys)+1)
	for _, ks := range keys {
		all = append(all, ks)
	}
	all = append(all, s.other)
	sort.Slice(all, func(i, j int) bool { return all[i].key < all[j].key })
	unix := now.Unix()
	uptime := max(now.Sub(s.started).Seconds(), 1e-3)
	minute := min(uptime, 60)
	rows := make([]keyRow, 0, len(all))
	for _, ks := range all {
		var tot, last histogram
		tot.addBucket(&ks.total)
		if tot.count() == 0 {
			continue
		}
		cur := unix / statsKeySlot
		for i := range ks.recent.buckets {
			b := &ks.recent.buckets[i]
			// The last 60 s: the bucket being filled and the 11 before.
			if p := b.period.Load(); p > cur-statsKeySlots+1 && p <= cur {
				last.addBucket(b)
			}
		}
		rows = append(rows, keyRow{Key: ks.key, Minute: countsOf(&last, minute), Total: countsOf(&tot, uptime)})
	}
	return rows
}

// secondStat is one second of the charts.
type secondStat struct {
	Unix      int64             `json:"unix"`
	Requests  uint64            `json:"requests"`
	P99MS     float64           `json:"p99_ms"`
	ByOutcome [slotCount]uint64 `json:"-"`
}

// series returns the last statsSeconds seconds before now (the current
// one included), oldest first; seconds without requests are zero.
func (s *requestStats) series(now time.Time) []secondStat {
	unix := now.Unix()
	out := make([]secondStat, statsSeconds)
	for i := range out {
		sec := unix - int64(statsSeconds-1-i)
		out[i].Unix = sec
		if sec <= 0 {
			continue
		}
		b := &s.global.buckets[sec%statsSeconds]
		if b.period.Load() != sec {
			continue
		}
		var h histogram
		h.addBucket(b)
		out[i].Requests = h.count()
		out[i].P99MS = h.quantile(0.99)
		out[i].ByOutcome = h.n
	}
	return out
}
