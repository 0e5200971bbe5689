package debugpage

import (
	"slices"
	"sort"
	"strings"
	"time"
)

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

// attentionPerKind is how many rows of each kind the unfiltered first
// screen shows; ?outcome=KIND shows them all.
const attentionPerKind = 5

// attentionOf merges what needs attention: the cancellations and drops of
// the event log (linked to their traces where kept), the errored traces
// and the slowest ones, at most attentionPerKind of each kind, or all of
// one kind.
func attentionOf(base string, cancels []cancelEvent, drops []dropEvent, links []traceLink, kind string) []attention {
	traces := newTraceIndex(links)
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
				DurationMS: l.DurationMS, Reason: l.Reason, Detail: l.Detail, TraceID: l.TraceID, TraceURL: traceURL(base, l.TraceID),
			})
		}
	}
	out = out[:limit("error", len(out))]
	// A cancelled request's response is dropped too: its row tells both,
	// and the drops listed apart are the others (the peer gone, the
	// writer closed under a finished handler). The two events of one
	// request share its session, id and receipt.
	cancelled := make(map[eventKey]bool, len(cancels))
	for _, e := range cancels {
		cancelled[eventKey{e.SessionID, e.RequestID, e.received}] = true
	}
	dropOf := make(map[eventKey]string, len(drops))
	drops = slices.DeleteFunc(slices.Clone(drops), func(e dropEvent) bool {
		k := eventKey{e.SessionID, e.RequestID, e.received}
		if cancelled[k] {
			dropOf[k] = e.Reason
			return true
		}
		return false
	})
	// Each cancellation's trace, so that it is one row, not two.
	type traced struct {
		link traceLink
		ok   bool
	}
	cancelTrace := make([]traced, len(cancels))
	claimed := make(map[string]bool, len(cancels)) // trace ids
	for i, e := range cancels {
		if l, ok := traces.find(e.SessionID, e.RequestID, keyOf(e.Method, e.Name), e.received); ok {
			cancelTrace[i] = traced{l, true}
			claimed[l.TraceID] = true
		}
	}
	// A handler timeout answered -32001 is no cancellation of the request
	// for the event log, but its trace carries the cause: list it too.
	cancels = slices.Clone(cancels)
	for _, l := range links {
		if l.Class == "cancelled" && !claimed[l.TraceID] {
			cancels = append(cancels, cancelEvent{
				Time: l.Start, SessionID: l.SessionID, RequestID: l.RequestID,
				Method: l.Key, Reason: l.Reason, Cause: l.Detail, RanFor: l.DurationMS,
			})
			cancelTrace = append(cancelTrace, traced{l, true})
		}
	}
	order := make([]int, len(cancels))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cancels[b].Time.Compare(cancels[a].Time) })
	for _, i := range order[:limit("cancelled", len(order))] {
		e := cancels[i]
		k := eventKey{e.SessionID, e.RequestID, e.received}
		a := attention{
			Kind: "cancelled", Time: e.Time, Key: keyOf(e.Method, e.Name), SessionID: e.SessionID, RequestID: e.RequestID,
			DurationMS: e.RanFor, Reason: e.Reason, Detail: e.Cause, principalView: e.principalView,
		}
		if r, ok := dropOf[k]; ok {
			a.Detail += " · response dropped: " + r
		}
		if t := cancelTrace[i]; t.ok {
			a.TraceID, a.TraceURL = t.link.TraceID, traceURL(base, t.link.TraceID)
		}
		out = append(out, a)
	}
	for _, e := range drops[:limit("dropped", len(drops))] {
		a := attention{
			Kind: "dropped", Time: e.Time, Key: keyOf(e.Method, e.Name), SessionID: e.SessionID, RequestID: e.RequestID,
			Reason: e.Reason, principalView: e.principalView,
		}
		if l, ok := traces.find(e.SessionID, e.RequestID, keyOf(e.Method, e.Name), e.received); ok {
			a.TraceID, a.TraceURL, a.DurationMS = l.TraceID, traceURL(base, l.TraceID), l.DurationMS
		}
		out = append(out, a)
	}
	slow := slowOf(links)
	for _, l := range slow[:limit("slow", len(slow))] {
		out = append(out, attention{
			Kind: "slow", Time: l.Start, Key: l.Key, SessionID: l.SessionID, RequestID: l.RequestID,
			DurationMS: l.DurationMS, TraceID: l.TraceID, TraceURL: traceURL(base, l.TraceID),
		})
	}
	if out == nil {
		out = []attention{}
	}
	return out
}

// eventKey names the request of a cancellation or drop event: its session
// ("" for a 2026-07-28 request, which belongs to none), id and receipt,
// since requests of no session may share an id.
type eventKey struct {
	session, request string
	received         time.Time
}

// traceIndex finds the kept trace of a request, by its session and id as
// its root span names them.
type traceIndex map[[2]string][]traceLink

func newTraceIndex(links []traceLink) traceIndex {
	ix := make(traceIndex, len(links))
	for _, l := range links {
		if l.RequestID != "" {
			k := [2]string{l.SessionID, l.RequestID}
			ix[k] = append(ix[k], l)
		}
	}
	return ix
}

// pairWithin bounds how long after a request's receipt its trace may
// start for a request of no session, whose id other requests may share:
// the span starts as the chain begins, on the request's own goroutine.
const pairWithin = time.Second

// find returns the trace of the request session/id with key (keyOf: its
// method, or "tools/call NAME"), received then (zero: unknown). In a session the id names one request;
// without one, the trace that started first after its receipt, within
// pairWithin, is its.
func (ix traceIndex) find(session, id, key string, received time.Time) (traceLink, bool) {
	cands := ix[[2]string{session, id}]
	if len(cands) == 0 {
		return traceLink{}, false
	}
	if session != "" || received.IsZero() {
		return cands[0], true
	}
	best, gap := -1, pairWithin
	for i, l := range cands {
		if l.Key != key && !strings.HasPrefix(l.Key, key+" ") { // a span is named "{method} {target}"
			continue
		}
		if d := l.Start.Sub(received); d >= 0 && d <= gap { // the span starts after the receipt
			best, gap = i, d
		}
	}
	if best < 0 {
		return traceLink{}, false
	}
	return cands[best], true
}

// Slow traces: a routine (answered, not failed) trace is slow when it
// took slowAbsoluteMS or more, or, with slowMinSamples kept traces of
// its method/tool at least, slowFactor times their median; never below
// slowFloorMS, where a scheduler's hiccup or a collection is enough to
// multiply a sub-millisecond request's time and nobody has anything to
// act on.
const (
	slowAbsoluteMS = 100
	slowFactor     = 5
	slowFloorMS    = 10
	slowMinSamples = 5
)

// slowOf returns the slow routine traces of links, the slowest first.
func slowOf(links []traceLink) []traceLink {
	byKey := map[string][]float64{}
	for _, l := range links {
		if l.Class == "recent" {
			byKey[l.Key] = append(byKey[l.Key], l.DurationMS)
		}
	}
	median := make(map[string]float64, len(byKey)) // absent: too few to tell
	for k, ds := range byKey {
		if len(ds) >= slowMinSamples {
			slices.Sort(ds)
			median[k] = ds[len(ds)/2]
		}
	}
	var slow []traceLink
	for _, l := range links {
		if l.Class != "recent" {
			continue
		}
		m, known := median[l.Key]
		if l.DurationMS >= slowAbsoluteMS || (known && l.DurationMS >= slowFloorMS && l.DurationMS >= slowFactor*m) {
			slow = append(slow, l)
		}
	}
	sort.SliceStable(slow, func(i, j int) bool { return slow[j].DurationMS < slow[i].DurationMS }) // sort.Slice for large rows: see debugPage.snapshot
	return slow
}
