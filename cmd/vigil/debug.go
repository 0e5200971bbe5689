package main

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
)

// debugPage serves /debug/vigil: a server-rendered page, refreshed by the
// browser every few seconds, whose first screen answers "is anything
// wrong?": what needs attention (recent errors, cancellations with their
// causes, dropped responses, the slowest traces, each linked to its trace
// view), a per-method/tool table (rate, latency quantiles, errors,
// cancellations and drops over the last minute and since start, sortable),
// and small inline SVG charts of the last ten minutes (request rate, p99,
// outcomes stacked). Below: the requests in flight (oldest first), the
// live sessions (transport, protocol era, client, principal, in-flight
// count), a summary of the kept traces by method/tool, and the recently
// ended sessions.
//
// Every view is a plain URL: ?session=ID, ?key=METHOD-OR-"tools/call NAME",
// ?outcome=error|cancelled|dropped|slow narrow it, ?sort=COLUMN orders the
// table, ?format=json returns the same view as JSON (with &series=1, the
// last ten minutes second by second too), ?refresh=N sets the
// refresh period in seconds (0: none). The page is read-only, escapes
// everything (html/template), runs no script, and is served with a strict
// Content-Security-Policy (setDebugHeaders). It is safe for
// concurrent use.
type debugPage struct {
	srv     *server.Server
	in      *instruments
	events  *eventLog
	ready   readiness
	started time.Time
	// sessions is the most live sessions (-max-sessions): the event log
	// keeps an entry per live session, which its bound counts.
	sessions int
}

// debugSnapshot is what /debug/vigil shows.
type debugSnapshot struct {
	Now           time.Time      `json:"now"`
	Version       string         `json:"version"`
	UptimeMS      float64        `json:"uptime_ms"`
	Ready         bool           `json:"ready"`
	Exporter      string         `json:"trace_exporter"`
	Filter        debugFilter    `json:"filter"`
	Stats         []keyRow       `json:"stats"`     // per method/tool, in the order of Filter.Sort
	Attention     []attention    `json:"attention"` // errors, cancellations, drops and slow traces, newest first
	Sessions      []debugSession `json:"sessions"`
	InFlight      []debugRequest `json:"in_flight"`
	Cancellations []cancelEvent  `json:"cancellations"`
	Drops         []dropEvent    `json:"dropped_responses"`
	EndedSessions []endedSession `json:"ended_sessions"`
	TraceSummary  []traceGroup   `json:"trace_summary"` // the kept traces, by method/tool
	Traces        []traceView    `json:"traces"`        // the kept traces, newest first (JSON only)
	TracesKept    bool           `json:"traces_kept"`   // false when spans go elsewhere
	// TracesKeptCount is how many kept traces this view lists.
	TracesKeptCount int          `json:"traces_kept_count"`
	Memory          debugMemory  `json:"memory"`
	Series          []secondStat `json:"series,omitempty"` // the last 10 minutes, second by second (with ?series=1)
}

// debugFilter is what a view is narrowed to, from its URL.
type debugFilter struct {
	Session string `json:"session,omitempty"`
	Key     string `json:"key,omitempty"`     // "tools/call echo", "initialize", ...
	Outcome string `json:"outcome,omitempty"` // error, cancelled, dropped or slow
	Sort    string `json:"sort"`              // a column of the table
}

// debugOutcomes are the values of ?outcome=.
var debugOutcomes = []string{"error", "cancelled", "dropped", "slow"}

// debugSorts are the columns of ?sort=; all but key sort the largest first.
var debugSorts = []string{"key", "rate", "p50", "p95", "p99", "errors", "cancelled", "dropped", "total"}

func filterOf(q url.Values) debugFilter {
	f := debugFilter{Session: q.Get("session"), Key: q.Get("key"), Outcome: q.Get("outcome"), Sort: q.Get("sort")}
	if !slices.Contains(debugOutcomes, f.Outcome) {
		f.Outcome = ""
	}
	if !slices.Contains(debugSorts, f.Sort) {
		f.Sort = "key"
	}
	return f
}

// debugSession is a live session.
type debugSession struct {
	ID        string    `json:"id"`
	Transport string    `json:"transport"`
	Protocol  string    `json:"protocol_version"` // "" until initialize, and for a stateless request
	Era       string    `json:"era"`              // "2025 session" or "2026 stateless"
	Client    string    `json:"client,omitempty"` // clientInfo name and version
	Started   time.Time `json:"started"`
	AgeMS     float64   `json:"age_ms"`
	InFlight  int       `json:"in_flight"`

	principalView // who opened it (subject, client_id), with -auth-issuer
}

// debugRequest is a request in flight, in either direction.
type debugRequest struct {
	SessionID string    `json:"session_id"`
	Direction string    `json:"direction"` // "incoming" (a handler runs) or "outgoing" (waiting for the client)
	ID        string    `json:"id"`
	Method    string    `json:"method"`
	Name      string    `json:"name,omitempty"`
	Key       string    `json:"key"`
	Started   time.Time `json:"started"`
	AgeMS     float64   `json:"age_ms"`

	principalView // its session's (subject, client_id), with -auth-issuer
}

// attention is one row of "needs attention": a request that failed, was
// cancelled, lost its response or was slow.
type attention struct {
	Kind       string    `json:"kind"` // error, cancelled, dropped or slow
	Time       time.Time `json:"time"`
	Key        string    `json:"key"`
	SessionID  string    `json:"session_id,omitempty"`
	RequestID  string    `json:"request_id,omitempty"`
	DurationMS float64   `json:"duration_ms"`
	Reason     string    `json:"reason,omitempty"` // the cause, drop reason or error type
	Detail     string    `json:"detail,omitempty"` // the cause's text, the error's message
	TraceID    string    `json:"trace_id,omitempty"`
	TraceURL   string    `json:"trace_url,omitempty"`

	principalView
}

// debugMemory is what the page's data may hold at most, in bytes.
type debugMemory struct {
	StatsBound  int64 `json:"stats_bound_bytes"`
	StatsInUse  int64 `json:"stats_in_use_bytes"`
	EventsBound int64 `json:"event_log_bound_bytes"` // recentEvents of each kind, and an entry per live session (eventsBoundBytes)
	// RingBound is the trace ring's bound and RingInUse its current
	// estimate (spanRing.memory); 0 when spans go to an exporter.
	RingBound  int64 `json:"trace_ring_bound_bytes"`
	RingInUse  int64 `json:"trace_ring_in_use_bytes"`
	RingTraces int   `json:"trace_ring_traces"`
	Total      int64 `json:"total_bound_bytes"`
}

// attentionPerKind is how many rows of each kind the unfiltered first
// screen shows; ?outcome=KIND shows them all.
const attentionPerKind = 5

func (p *debugPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	now := time.Now()
	asJSON := q.Get("format") == "json"
	snap := p.snapshot(now, filterOf(q), asJSON)
	setDebugHeaders(w)
	if asJSON {
		if q.Get("series") == "1" && p.events.stats != nil {
			snap.Series = p.events.stats.series(now)
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(snap)
		return
	}
	refresh := 2
	if v, err := strconv.Atoi(q.Get("refresh")); err == nil && v >= 0 {
		refresh = min(v, 3600)
	}
	var series []secondStat
	if p.events.stats != nil {
		series = p.events.stats.series(now)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = debugTemplate.Execute(w, debugView{debugSnapshot: snap, Refresh: refresh, Query: q, Charts: chartsOf(series)})
}

// snapshot gathers what the page shows, as of now, narrowed by f; with
// withTraces (the JSON form), the kept traces in full too.
func (p *debugPage) snapshot(now time.Time, f debugFilter, withTraces bool) debugSnapshot {
	snap := debugSnapshot{
		Now:        now,
		Version:    version,
		UptimeMS:   millis(now.Sub(p.started)),
		Ready:      p.ready.Load(),
		Exporter:   p.in.exporter,
		Filter:     f,
		Stats:      []keyRow{},
		Attention:  []attention{},
		Sessions:   []debugSession{},
		InFlight:   []debugRequest{},
		Traces:     []traceView{},
		TracesKept: p.in.ring != nil,
	}
	for _, s := range p.srv.Sessions() {
		pending := s.Pending()
		ds := debugSession{
			ID:        cutString(s.ID()),
			Transport: p.events.transportOf(s),
			Protocol:  s.ProtocolVersion(),
			Started:   s.Started(),
			AgeMS:     millis(now.Sub(s.Started())),
			InFlight:  len(pending),

			principalView: p.events.principalOfSession(s),
		}
		// Only a session's initialize sets its protocol version; a
		// 2026-07-28 stateless request's connection never has one.
		ds.Era = "2025 session"
		if ds.Protocol == "" && !slices.ContainsFunc(pending, func(pr server.PendingRequest) bool { return pr.Method == "initialize" }) {
			ds.Era = "2026 stateless"
			// Observers hear of no session for it (transport.Single); it
			// came over HTTP, the only transport of that era here.
			ds.Transport = telemetry.TransportStreamableHTTP
		}
		if ci := s.ClientInfo(); ci.Name != "" {
			ds.Client = strings.TrimSpace(cutString(ci.Name) + " " + cutString(ci.Version))
		}
		if ds.Protocol == "" && len(pending) == 0 {
			continue // a session starting, or a stateless request finishing
		}
		if f.Session != "" && ds.ID != f.Session {
			continue
		}
		snap.Sessions = append(snap.Sessions, ds)
		for _, pr := range pending {
			dir := "incoming"
			if pr.Outgoing {
				dir = "outgoing"
			}
			dr := debugRequest{
				SessionID: ds.ID, Direction: dir, ID: cutString(pr.ID.String()), Method: cutString(pr.Method), Name: cutString(pr.Name),
				Started: pr.Started, AgeMS: millis(now.Sub(pr.Started)), principalView: ds.principalView,
			}
			dr.Key = keyOf(dr.Method, dr.Name)
			if f.Key != "" && dr.Key != f.Key {
				continue
			}
			snap.InFlight = append(snap.InFlight, dr)
		}
	}
	slices.SortFunc(snap.Sessions, func(a, b debugSession) int {
		return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.ID, b.ID))
	})
	slices.SortFunc(snap.InFlight, func(a, b debugRequest) int { return a.Started.Compare(b.Started) })

	if st := p.events.stats; st != nil {
		for _, row := range st.rows(now) {
			if f.Key == "" || row.Key == f.Key {
				snap.Stats = append(snap.Stats, row)
			}
		}
		sortRows(snap.Stats, f.Sort)
	}

	cancels, drops, ended := p.events.recentSnapshot()
	match := func(session, key string) bool {
		return (f.Session == "" || session == f.Session) && (f.Key == "" || key == f.Key)
	}
	snap.Cancellations = slices.DeleteFunc(cancels, func(e cancelEvent) bool { return !match(e.SessionID, keyOf(e.Method, e.Name)) })
	snap.Drops = slices.DeleteFunc(drops, func(e dropEvent) bool { return !match(e.SessionID, keyOf(e.Method, e.Name)) })
	snap.EndedSessions = slices.DeleteFunc(ended, func(e endedSession) bool { return f.Session != "" && e.SessionID != f.Session })

	links := p.traceLinks(linkFilter{Session: f.Session, Key: f.Key})
	snap.TracesKeptCount = len(links)
	if withTraces && p.in.ring != nil {
		listed := make(map[string]bool, len(links))
		for _, l := range links {
			listed[l.TraceID] = true
		}
		snap.Traces = slices.DeleteFunc(p.in.ring.snapshot(), func(tv traceView) bool { return !listed[tv.TraceID] })
	}
	snap.Attention = attentionOf(snap.Cancellations, snap.Drops, links, f.Outcome)
	snap.TraceSummary = summarize(links, f.Outcome)
	snap.Memory = p.memory()
	return snap
}

// keyOf is the stats key of a request: its method, or "tools/call NAME".
func keyOf(method, name string) string {
	if method == "tools/call" && name != "" {
		return statsToolPrefix + name
	}
	return method
}

func sortRows(rows []keyRow, by string) {
	val := func(r keyRow) float64 {
		m := r.Minute
		switch by {
		case "rate":
			return m.RatePerSec
		case "p50":
			return m.P50MS
		case "p95":
			return m.P95MS
		case "p99":
			return m.P99MS
		case "errors":
			return float64(m.Errors)
		case "cancelled":
			return float64(m.Cancelled)
		case "dropped":
			return float64(m.Dropped)
		case "total":
			return float64(r.Total.Requests)
		}
		return 0
	}
	slices.SortStableFunc(rows, func(a, b keyRow) int {
		return cmp.Or(cmp.Compare(val(b), val(a)), cmp.Compare(a.Key, b.Key))
	})
}

// traceLink is a kept trace, as the page lists and links it.
type traceLink struct {
	TraceID    string    `json:"trace_id"`
	Key        string    `json:"key"`   // its root span's name: the method, or "tools/call NAME"
	Class      string    `json:"class"` // error, cancelled, dropped or recent
	Reason     string    `json:"reason,omitempty"`
	Detail     string    `json:"detail,omitempty"`
	DurationMS float64   `json:"duration_ms"`
	Start      time.Time `json:"start"`
	SessionID  string    `json:"session_id,omitempty"`
	RequestID  string    `json:"request_id,omitempty"`
}

// linkFilter narrows traceLinks.
type linkFilter struct {
	Session, Key string
}

// traceURL is the trace view of a trace.
func traceURL(traceID string) string { return "/debug/vigil/trace/" + url.PathEscape(traceID) }

// traceLinks returns the traces the ring keeps that match f, newest first:
// those it keeps for their outcome or slowness however much routine
// traffic came after them (tail-based retention), and the recent routine
// ones.
func (p *debugPage) traceLinks(f linkFilter) []traceLink {
	if p.in.ring == nil {
		return nil
	}
	seen := make(map[string]bool)
	var links []traceLink
	// The classes that need attention first: every kept error,
	// cancellation and drop, the slowest per method/tool, then the recent
	// routine ones.
	for _, class := range [...]string{classError, classCancelled, classDropped, classSlow, classRecent} {
		for _, s := range p.in.ring.list(traceFilter{Key: f.Key, Class: class}) {
			if seen[s.TraceID] || (f.Session != "" && s.SessionID != f.Session) {
				continue
			}
			seen[s.TraceID] = true
			links = append(links, linkOf(s))
		}
	}
	slices.SortFunc(links, func(a, b traceLink) int { return b.Start.Compare(a.Start) })
	return links
}

// linkOf is the page's link to a kept trace: its class is its outcome
// (error, cancelled, dropped) or "recent" for a routine one, and its
// reason the cancel cause, drop reason or error.
func linkOf(s traceSummary) traceLink {
	l := traceLink{TraceID: s.TraceID, Key: s.Key, Class: "recent", DurationMS: s.DurationMS, Start: s.Start, SessionID: s.SessionID, RequestID: s.RequestID}
	switch s.Outcome {
	case classError, classCancelled, classDropped:
		l.Class, l.Reason = s.Outcome, s.Detail
	}
	return l
}

// attentionOf merges what needs attention: the cancellations and drops of
// the event log (linked to their traces where kept), the errored traces
// and the slowest ones, at most attentionPerKind of each kind, or all of
// one kind.
func attentionOf(cancels []cancelEvent, drops []dropEvent, links []traceLink, kind string) []attention {
	byReq := make(map[[2]string]traceLink, len(links))
	for _, l := range links {
		if l.RequestID != "" {
			byReq[[2]string{l.SessionID, l.RequestID}] = l
		}
	}
	limit := func(k string, n int) int {
		if kind == k {
			return n
		}
		if kind != "" {
			return 0
		}
		return min(n, attentionPerKind)
	}
	var out []attention
	for _, l := range links {
		if l.Class == "error" && limit("error", 1) > 0 {
			out = append(out, attention{
				Kind: "error", Time: l.Start, Key: l.Key, SessionID: l.SessionID, RequestID: l.RequestID,
				DurationMS: l.DurationMS, Reason: l.Reason, Detail: l.Detail, TraceID: l.TraceID, TraceURL: traceURL(l.TraceID),
			})
		}
	}
	out = out[:limit("error", len(out))]
	// A cancelled request's response is dropped too: its row tells both,
	// and the drops listed apart are the others (the peer gone, the
	// writer closed under a finished handler).
	cancelled := make(map[[2]string]bool, len(cancels))
	for _, e := range cancels {
		cancelled[[2]string{e.SessionID, e.RequestID}] = true
	}
	dropOf := make(map[[2]string]string, len(drops))
	drops = slices.DeleteFunc(slices.Clone(drops), func(e dropEvent) bool {
		k := [2]string{e.SessionID, e.RequestID}
		if cancelled[k] {
			dropOf[k] = e.Reason
			return true
		}
		return false
	})
	// A handler timeout answered -32001 is no cancellation of the request
	// for the event log, but its trace carries the cause: list it too.
	cancels = slices.Clone(cancels)
	for _, l := range links {
		if l.Class == "cancelled" && !cancelled[[2]string{l.SessionID, l.RequestID}] {
			cancels = append(cancels, cancelEvent{
				Time: l.Start, SessionID: l.SessionID, RequestID: l.RequestID,
				Method: l.Key, Reason: l.Reason, Cause: l.Detail, RanFor: l.DurationMS,
			})
		}
	}
	slices.SortStableFunc(cancels, func(a, b cancelEvent) int { return b.Time.Compare(a.Time) })
	for _, e := range cancels[:limit("cancelled", len(cancels))] {
		k := [2]string{e.SessionID, e.RequestID}
		a := attention{
			Kind: "cancelled", Time: e.Time, Key: keyOf(e.Method, e.Name), SessionID: e.SessionID, RequestID: e.RequestID,
			DurationMS: e.RanFor, Reason: e.Reason, Detail: e.Cause, principalView: e.principalView,
		}
		if r, ok := dropOf[k]; ok {
			a.Detail += " · response dropped: " + r
		}
		if l, ok := byReq[k]; ok {
			a.TraceID, a.TraceURL = l.TraceID, traceURL(l.TraceID)
		}
		out = append(out, a)
	}
	for _, e := range drops[:limit("dropped", len(drops))] {
		a := attention{
			Kind: "dropped", Time: e.Time, Key: keyOf(e.Method, e.Name), SessionID: e.SessionID, RequestID: e.RequestID,
			Reason: e.Reason, principalView: e.principalView,
		}
		if l, ok := byReq[[2]string{e.SessionID, e.RequestID}]; ok {
			a.TraceID, a.TraceURL, a.DurationMS = l.TraceID, traceURL(l.TraceID), l.DurationMS
		}
		out = append(out, a)
	}
	slow := slowOf(links)
	for _, l := range slow[:limit("slow", len(slow))] {
		out = append(out, attention{
			Kind: "slow", Time: l.Start, Key: l.Key, SessionID: l.SessionID, RequestID: l.RequestID,
			DurationMS: l.DurationMS, TraceID: l.TraceID, TraceURL: traceURL(l.TraceID),
		})
	}
	if out == nil {
		out = []attention{}
	}
	return out
}

// Slow traces: a routine (answered, not failed) trace is slow when it
// took slowAbsoluteMS or more, or slowFactor times its method/tool's
// median among the kept traces and at least slowFloorMS.
const (
	slowAbsoluteMS = 100
	slowFactor     = 5
	slowFloorMS    = 1
)

// slowOf returns the slow routine traces of links, the slowest first.
func slowOf(links []traceLink) []traceLink {
	byKey := map[string][]float64{}
	for _, l := range links {
		if l.Class == "recent" {
			byKey[l.Key] = append(byKey[l.Key], l.DurationMS)
		}
	}
	median := make(map[string]float64, len(byKey))
	for k, ds := range byKey {
		slices.Sort(ds)
		median[k] = ds[len(ds)/2]
	}
	var slow []traceLink
	for _, l := range links {
		if l.Class != "recent" {
			continue
		}
		if l.DurationMS >= slowAbsoluteMS || (l.DurationMS >= slowFloorMS && l.DurationMS >= slowFactor*median[l.Key]) {
			slow = append(slow, l)
		}
	}
	slices.SortStableFunc(slow, func(a, b traceLink) int { return cmp.Compare(b.DurationMS, a.DurationMS) })
	return slow
}

// traceGroup is the kept traces of one method/tool: one line in place of
// a long list of identical routine traces.
type traceGroup struct {
	Key        string  `json:"key"`
	Count      int     `json:"count"`
	Errors     int     `json:"errors"`
	Cancelled  int     `json:"cancelled"`
	Dropped    int     `json:"dropped"`
	MaxMS      float64 `json:"max_ms"`
	SlowestID  string  `json:"slowest_trace_id"`
	SlowestURL string  `json:"slowest_trace_url"`
	LatestID   string  `json:"latest_trace_id"`
	LatestURL  string  `json:"latest_trace_url"`
}

// summarize groups links (newest first) by key, in key order; with an
// outcome, only the traces of that class (slow: all).
func summarize(links []traceLink, outcome string) []traceGroup {
	groups := map[string]*traceGroup{}
	var keys []string
	for _, l := range links {
		if outcome != "" && outcome != "slow" && l.Class != outcome {
			continue
		}
		g := groups[l.Key]
		if g == nil {
			g = &traceGroup{Key: l.Key, LatestID: l.TraceID, LatestURL: traceURL(l.TraceID), MaxMS: -1}
			groups[l.Key] = g
			keys = append(keys, l.Key)
		}
		g.Count++
		switch l.Class {
		case "error":
			g.Errors++
		case "cancelled":
			g.Cancelled++
		case "dropped":
			g.Dropped++
		}
		if l.DurationMS > g.MaxMS {
			g.MaxMS, g.SlowestID, g.SlowestURL = l.DurationMS, l.TraceID, traceURL(l.TraceID)
		}
	}
	slices.Sort(keys)
	out := make([]traceGroup, 0, len(keys))
	for _, k := range keys {
		out = append(out, *groups[k])
	}
	return out
}

// Bounds of the event log. Each text an event keeps is cut (cutString), so
// an event holds at most its struct and eventTextBytes per text.
const (
	// eventTextBytes is a cut text: ringAttrValueMaxLen bytes and the
	// marker, rounded up to its allocation.
	eventTextBytes = 320
	// eventSessionBytes is what a live session costs the event log: its
	// entries in the two maps (with room for their growth) and the two
	// texts of its principal.
	eventSessionBytes = 256 + 2*eventTextBytes
)

// eventsBoundBytes is the most memory an eventLog holds with at most
// sessions live sessions: three rings of recentEvents events, each with
// its texts (cancelEvent 7, dropEvent 6, endedSession 5; reasons and
// transports are constants), and the entries of the live sessions.
func eventsBoundBytes(sessions int) int64 {
	ring := func(size uintptr, texts int64) int64 { return recentEvents * (int64(size) + texts*eventTextBytes) }
	return ring(unsafe.Sizeof(cancelEvent{}), 7) + ring(unsafe.Sizeof(dropEvent{}), 6) + ring(unsafe.Sizeof(endedSession{}), 5) +
		int64(unsafe.Sizeof(eventLog{})) + int64(max(sessions, 0))*eventSessionBytes
}

func (p *debugPage) memory() debugMemory {
	m := debugMemory{EventsBound: eventsBoundBytes(p.sessions + 1)} // +1: a stdio session
	if st := p.events.stats; st != nil {
		m.StatsBound, m.StatsInUse = statsBoundBytes(), st.statsInUseBytes()
	}
	if p.in.ring != nil {
		rm := p.in.ring.memory()
		m.RingBound, m.RingInUse, m.RingTraces = rm.Bound, rm.Bytes, rm.Traces
	}
	m.Total = m.StatsBound + m.EventsBound + m.RingBound
	return m
}
