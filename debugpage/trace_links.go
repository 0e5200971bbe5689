package debugpage

import (
	"net/url"
	"slices"
	"sort"
	"time"
)

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

// traceURL is the trace view of a trace, for the page mounted at base.
func traceURL(base, traceID string) string { return base + "/trace/" + url.PathEscape(traceID) }

// traceLinks returns the traces the ring keeps that match f, newest first:
// those it keeps for their outcome or slowness however much routine
// traffic came after them (tail-based retention), and the recent routine
// ones.
func traceLinks(ring *spanRing, f linkFilter) []traceLink {
	if ring == nil {
		return nil
	}
	seen := make(map[string]bool)
	var links []traceLink
	// The classes that need attention first: every kept error,
	// cancellation and drop, the slowest per method/tool, then the recent
	// routine ones.
	for _, class := range [...]string{classError, classCancelled, classDropped, classSlow, classRecent} {
		for _, s := range ring.list(traceFilter{Key: f.Key, Class: class}) {
			if seen[s.TraceID] || (f.Session != "" && s.SessionID != f.Session) {
				continue
			}
			seen[s.TraceID] = true
			links = append(links, linkOf(s))
		}
	}
	sort.Slice(links, func(i, j int) bool { return links[j].Start.Before(links[i].Start) }) // sort.Slice for large rows: see debugPage.snapshot
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
func summarize(base string, links []traceLink, outcome string) []traceGroup {
	groups := map[string]*traceGroup{}
	var keys []string
	for _, l := range links {
		if outcome != "" && outcome != "slow" && l.Class != outcome {
			continue
		}
		g := groups[l.Key]
		if g == nil {
			g = &traceGroup{Key: l.Key, LatestID: l.TraceID, LatestURL: traceURL(base, l.TraceID), MaxMS: -1}
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
			g.MaxMS, g.SlowestID, g.SlowestURL = l.DurationMS, l.TraceID, traceURL(base, l.TraceID)
		}
	}
	slices.Sort(keys)
	out := make([]traceGroup, 0, len(keys))
	for _, k := range keys {
		out = append(out, *groups[k])
	}
	return out
}
