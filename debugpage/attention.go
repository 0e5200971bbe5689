package debugpage

import (
	"cmp"
	"slices"
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
				DurationMS: l.DurationMS, Reason: l.Reason, Detail: l.Detail, TraceID: l.TraceID, TraceURL: traceURL(base, l.TraceID),
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
			a.TraceID, a.TraceURL = l.TraceID, traceURL(base, l.TraceID)
		}
		out = append(out, a)
	}
	for _, e := range drops[:limit("dropped", len(drops))] {
		a := attention{
			Kind: "dropped", Time: e.Time, Key: keyOf(e.Method, e.Name), SessionID: e.SessionID, RequestID: e.RequestID,
			Reason: e.Reason, principalView: e.principalView,
		}
		if l, ok := byReq[[2]string{e.SessionID, e.RequestID}]; ok {
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
