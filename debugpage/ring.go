package debugpage

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/receiving"
)

// Defaults of the in-memory trace ring.
const (
	ringSpansPerTrace   = 256 // spans kept per trace; more are counted, not kept
	ringAttrValueMaxLen = 256 // longer attribute values are cut
	ringSnapshotTraces  = 100 // traces in a snapshot, the newest
)

// spanRing is a span exporter that keeps, in memory, the traces worth
// looking at on the live page, within a fixed memory bound: per
// method/tool, the slowest traces and the last errored, cancelled and
// dropped ones, and, overall, the last routine ones (retention.go says
// how). Each trace keeps at most ringSpansPerTrace spans. It is safe for
// concurrent use; Shutdown keeps what was stored.
//
// Exporting runs for every span the binary ends, and the pages are
// rendered rarely: the ring keeps the SDK's read-only spans as they are
// (immutable snapshots, which the SDK allocated anyway) and formats them
// only when asked. A forgotten trace's storage is reused for a new one, so
// that exporting allocates nothing once the ring is in a steady state.
type spanRing struct {
	mu       sync.Mutex                  // taken through lock and unlock (ring_intake.go)
	intake   atomic.Pointer[pendingSpan] // ended spans not stored yet (ring_intake.go)
	lim      ringLimits
	traces   map[trace.TraceID]*ringTrace // every trace kept
	free     []*ringTrace                 // forgotten, for reuse
	bytes    int64                        // estimated size of the kept spans
	seq      uint64                       // traces classified so far
	pending  traceFIFO                    // root not ended yet
	recent   traceFIFO                    // routine
	classes  [ringOutcomeClasses]traceFIFO
	keys     []keyStore // at most ringMaxKeys+1
	keyIndex map[string]int
	lastKey  int                        // the key last looked up, or -1
	server   atomic.Pointer[ringServer] // whose names may be keys (keyByServer); nil: any
}

var (
	_ sdktrace.SpanExporter  = (*spanRing)(nil)
	_ receiving.SpanReceiver = (*spanRing)(nil)
)

// spanRecord is an ended span, as the debug page shows it.
type spanRecord struct {
	TraceID           string            `json:"trace_id"`
	SpanID            string            `json:"span_id"`
	ParentSpanID      string            `json:"parent_span_id,omitempty"`
	Name              string            `json:"name"`
	Kind              string            `json:"kind"`
	Start             time.Time         `json:"start"`
	End               time.Time         `json:"end"`
	DurationMS        float64           `json:"duration_ms"`
	Status            string            `json:"status"` // unset, ok or error
	StatusDescription string            `json:"status_description,omitempty"`
	Attributes        map[string]string `json:"attributes,omitempty"`
	Events            []spanEvent       `json:"events,omitempty"`
	// Depth is the span's depth in its trace's tree (0 for a root); set in
	// a snapshot.
	Depth int `json:"depth"`
}

// spanEvent is an event of a span.
type spanEvent struct {
	Name       string            `json:"name"`
	Time       time.Time         `json:"time"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// traceView is one trace of a snapshot: its spans in tree order (each
// parent before its children, siblings by start time), and why it is
// kept.
type traceView struct {
	TraceID      string       `json:"trace_id"`
	Root         string       `json:"root"` // the name of the first root span
	Start        time.Time    `json:"start"`
	DurationMS   float64      `json:"duration_ms"`
	Error        bool         `json:"error"` // some span has status error
	Spans        []spanRecord `json:"spans"`
	DroppedSpans int          `json:"dropped_spans,omitempty"`
	// What the ring made of it (see traceSummary).
	Key      string   `json:"key,omitempty"`
	Outcome  string   `json:"outcome,omitempty"`
	Detail   string   `json:"detail,omitempty"`
	Classes  []string `json:"classes,omitempty"`
	Complete bool     `json:"complete"` // its local root span has ended
}

// newSpanRingLimits returns a ring with the limits lim.
func newSpanRingLimits(lim ringLimits) *spanRing {
	lim.Recent = max(lim.Recent, 1)
	r := &spanRing{
		lim:      lim,
		traces:   make(map[trace.TraceID]*ringTrace, ringPendingTraces+lim.Recent),
		pending:  newTraceFIFO(ringPendingTraces),
		recent:   newTraceFIFO(lim.Recent),
		keyIndex: make(map[string]int),
		lastKey:  -1,
	}
	for i := range r.classes {
		r.classes[i] = newTraceFIFO(ringClassTraces)
	}
	return r
}

// ExportSpans stores spans in their traces, classifying a trace when its
// local root arrives, and forgets traces beyond the limits (retention.go).
func (r *spanRing) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	r.lock()
	defer r.unlock()
	r.exportLocked(spans)
	return nil
}

// ReceiveSpan stores s, when it is sampled, as ExportSpans would: as the
// receiving.SpanReceiver of its provider (otelsetup.WithSyncFallback), the
// ring takes each span itself where it ends, with no snapshot of it, no
// batch of one to allocate and no wait for its lock (ring_intake.go).
//
// It does not read the span's attributes, which would make the SDK
// de-duplicate them: their count and size, the cancel cause and the error
// type come from what the provider saw them set (WatchedAttributes).
func (r *spanRing) ReceiveSpan(rs *receiving.ReceivedSpan) {
	if !rs.Span.SpanContext().IsSampled() {
		return
	}
	var f spanFacts
	if rs.Counted {
		f.readReceived(rs) // reads the span only: before the lock
	} else {
		f.read(rs.Span) // started with attributes the provider did not see
	}
	s := rs.Span
	if f.compact {
		// Before the intake, where up to a batch of spans waits
		// (ring_intake.go): an oversized span waits compacted.
		s = compactSpan(s)
		f.read(s)
	}
	r.receive(s, &f)
}

// The attribute keys the ring watches (WatchedAttributes), by index.
const (
	watchCause     = iota // vigil.cancel.cause
	watchErrorType        // error.type
)

// WatchedAttributes names the attributes the ring reads of a received
// span, at the indexes watchCause and watchErrorType.
func (*spanRing) WatchedAttributes() []attribute.Key {
	return []attribute.Key{watchCause: mcpconv.CancelCauseKey, watchErrorType: errorTypeKey}
}

// Shutdown does nothing: the stored spans stay readable.
func (*spanRing) Shutdown(context.Context) error { return nil }

// traceFilter selects kept traces; a zero field selects all.
type traceFilter struct {
	// Key is a method/tool key as traceSummary.Key has it: the local
	// root span's name, such as "tools/call echo" or "initialize", or
	// ringOtherKey ("(other)") for traces beyond the key limit.
	Key string
	// Class is why a trace is kept: "recent", "slow", "error",
	// "cancelled", "dropped" or "pending" (the class* constants). A trace
	// may be in several (a slow error).
	Class string
	// Limit is the most summaries returned (<= 0: all).
	Limit int
}

// traceSummary is a kept trace, for a list linking to its view at
// /trace/{TraceID}.
type traceSummary struct {
	TraceID string `json:"trace_id"` // 32 hex digits
	Key     string `json:"key"`      // its method/tool key ("" while pending)
	// Classes are why it is kept, in the order recent, slow, error,
	// cancelled, dropped; ["pending"] while its root has not ended.
	Classes []string `json:"classes"`
	// Outcome is "ok", "error", "cancelled" or "dropped", "" while
	// pending; Detail says more: the cancel cause (vigil.cancel.cause:
	// "client_cancel", "transport_close", "stream_close", "shutdown", "timeout",
	// "upstream_closed", "other"), the drop reason (vigil.drop.reason: "writer_closed",
	// "peer_gone", ...) or the error's description (or its error.type, as
	// "tool_error").
	Outcome    string    `json:"outcome"`
	Detail     string    `json:"detail,omitempty"`
	Start      time.Time `json:"start"`       // of the root span (of the first span while pending)
	DurationMS float64   `json:"duration_ms"` // of the root span
	Spans      int       `json:"spans"`
	Complete   bool      `json:"complete"` // its local root has ended
	// SessionID and RequestID are the root span's mcp.session.id and
	// jsonrpc.request.id, when it has them: the page links the event
	// log's cancellations and drops to their traces by them.
	SessionID string `json:"session_id,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// list returns the summaries of the kept traces that filter selects,
// newest first (by start), or, for the class "slow", slowest first; at
// most filter.Limit of them. Traces whose root has not ended have no key:
// they are listed with no Key in filter, and no Class or "pending". It is
// cheap (no span is formatted, and the ring is locked only to copy a few
// fields per trace) and safe to call from the page's handler.
func (r *spanRing) list(filter traceFilter) []traceSummary {
	r.lock()
	kept := make([]keptTrace, 0, len(r.traces))
	for _, t := range r.traces {
		if r.selects(t, filter) {
			kept = append(kept, r.keptLocked(t))
		}
	}
	r.unlock()
	if filter.Class == classSlow {
		sort.Slice(kept, func(i, j int) bool { // sort.Slice for large rows: see debugPage.snapshot
			a, b := &kept[i], &kept[j]
			return cmp.Or(cmp.Compare(b.dur, a.dur), bytes.Compare(a.id[:], b.id[:])) < 0
		})
	} else {
		sort.Slice(kept, func(i, j int) bool {
			a, b := &kept[i], &kept[j]
			return cmp.Or(b.start.Compare(a.start), bytes.Compare(a.id[:], b.id[:])) < 0
		})
	}
	if filter.Limit > 0 && len(kept) > filter.Limit {
		kept = kept[:filter.Limit]
	}
	out := make([]traceSummary, len(kept))
	for i, k := range kept {
		out[i] = k.summary()
	}
	return out
}

// keyNames returns the method/tool keys the ring tracks, in the order first
// seen (ringOtherKey among them once the limit was passed).
func (r *spanRing) keyNames() []string {
	r.lock()
	defer r.unlock()
	names := make([]string, len(r.keys))
	for i, ks := range r.keys {
		names[i] = ks.name
	}
	return names
}

// selects reports whether filter selects t. r.mu must be held.
func (r *spanRing) selects(t *ringTrace, f traceFilter) bool {
	if !t.done {
		return f.Key == "" && (f.Class == "" || f.Class == classPending)
	}
	if f.Key != "" && r.keys[t.key].name != f.Key {
		return false
	}
	switch f.Class {
	case "":
		return true
	case classRecent:
		return t.recentPos >= 0
	case classSlow:
		return t.slow
	default: // error, cancelled, dropped: every such trace kept
		return t.outcome.String() == f.Class
	}
}

// keptTrace is what a summary of a kept trace needs, copied under r.mu
// without allocating, formatted after.
type keptTrace struct {
	id                 trace.TraceID
	key, detail        string
	session, request   string
	outcome            traceOutcome
	start              time.Time
	dur                time.Duration
	spans              int
	done, recent, slow bool
}

// keptLocked copies what t's summary needs. r.mu must be held.
func (r *spanRing) keptLocked(t *ringTrace) keptTrace {
	k := keptTrace{id: t.id, spans: len(t.spans), done: t.done}
	if !t.done {
		for _, sp := range t.spans {
			if k.start.IsZero() || sp.StartTime().Before(k.start) {
				k.start = sp.StartTime()
			}
		}
		return k
	}
	k.key, k.outcome, k.detail = r.keys[t.key].name, t.outcome, t.detail
	k.start, k.dur, k.recent, k.slow = t.start, t.dur, t.recentPos >= 0, t.slow
	if t.root != nil {
		for _, kv := range t.root.Attributes() {
			switch kv.Key {
			case "mcp.session.id":
				k.session = cutString(kv.Value.String())
			case "jsonrpc.request.id":
				k.request = cutString(kv.Value.String())
			}
		}
	}
	return k
}

// summary formats k.
func (k keptTrace) summary() traceSummary {
	s := traceSummary{TraceID: k.id.String(), Spans: k.spans, Complete: k.done, Start: k.start, Classes: make([]string, 0, 2)}
	if !k.done {
		s.Classes = append(s.Classes, classPending)
		return s
	}
	s.Key, s.Outcome, s.Detail, s.DurationMS = k.key, k.outcome.String(), k.detail, millis(k.dur)
	s.SessionID, s.RequestID = k.session, k.request
	if k.recent {
		s.Classes = append(s.Classes, classRecent)
	}
	if k.slow {
		s.Classes = append(s.Classes, classSlow)
	}
	if k.outcome != outcomeOK {
		s.Classes = append(s.Classes, k.outcome.String())
	}
	return s
}

// lookup returns the view of the kept trace id.
func (r *spanRing) lookup(id trace.TraceID) (traceView, bool) {
	r.lock()
	t, ok := r.traces[id]
	if !ok {
		r.unlock()
		return traceView{}, false
	}
	k := r.keptLocked(t)
	spans, dropped := slices.Clone(t.spans), t.dropped
	r.unlock()
	return viewOf(k.summary(), spans, dropped), true
}

// snapshot returns the views of the newest ringSnapshotTraces kept traces,
// newest first. The result is a copy.
func (r *spanRing) snapshot() []traceView {
	sums := r.list(traceFilter{Limit: ringSnapshotTraces})
	type stored struct {
		spans   []sdktrace.ReadOnlySpan
		dropped int
	}
	kept := make([]stored, len(sums))
	r.lock()
	for i, s := range sums {
		id, _ := trace.TraceIDFromHex(s.TraceID)
		if t, ok := r.traces[id]; ok {
			kept[i] = stored{spans: slices.Clone(t.spans), dropped: t.dropped}
		}
	}
	r.unlock()
	out := make([]traceView, len(sums))
	for i, s := range sums {
		out[i] = viewOf(s, kept[i].spans, kept[i].dropped)
	}
	return out
}

// viewOf formats the spans of the trace sum summarizes.
func viewOf(sum traceSummary, spans []sdktrace.ReadOnlySpan, dropped int) traceView {
	recs := make([]spanRecord, len(spans))
	for j, s := range spans {
		recs[j] = recordOf(s)
	}
	v := traceView{
		TraceID: sum.TraceID, Spans: recs, DroppedSpans: dropped,
		Key: sum.Key, Outcome: sum.Outcome, Detail: sum.Detail, Classes: sum.Classes, Complete: sum.Complete,
	}
	v.arrange()
	return v
}

// arrange puts the spans of v in tree order with their depths, and fills in
// the trace's summary.
func (v *traceView) arrange() {
	spans := v.Spans
	sort.SliceStable(spans, func(i, j int) bool { // sort.Slice for large rows: see debugPage.snapshot
		a, b := &spans[i], &spans[j]
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.SpanID, b.SpanID)) < 0
	})
	present := make(map[string]bool, len(spans))
	for _, s := range spans {
		present[s.SpanID] = true
	}
	children := make(map[string][]int, len(spans))
	var roots []int
	for i, s := range spans {
		if s.ParentSpanID == "" || !present[s.ParentSpanID] || s.ParentSpanID == s.SpanID {
			roots = append(roots, i)
			continue
		}
		children[s.ParentSpanID] = append(children[s.ParentSpanID], i)
	}
	ordered := make([]spanRecord, 0, len(spans))
	seen := make([]bool, len(spans))
	var walk func(i, depth int)
	walk = func(i, depth int) {
		if seen[i] { // a cycle: only possible with forged ids
			return
		}
		seen[i] = true
		s := spans[i]
		s.Depth = depth
		ordered = append(ordered, s)
		for _, c := range children[s.SpanID] {
			walk(c, depth+1)
		}
	}
	for _, i := range roots {
		walk(i, 0)
	}
	for i := range spans { // spans caught in a cycle
		if !seen[i] {
			walk(i, 0)
		}
	}
	v.Spans = ordered
	if len(ordered) == 0 {
		return
	}
	v.Root = ordered[0].Name
	v.Start = ordered[0].Start
	end := ordered[0].End
	for _, s := range ordered {
		if s.Start.Before(v.Start) {
			v.Start = s.Start
		}
		if s.End.After(end) {
			end = s.End
		}
		if s.Status == "error" {
			v.Error = true
		}
	}
	v.DurationMS = millis(end.Sub(v.Start))
}

func recordOf(s sdktrace.ReadOnlySpan) spanRecord {
	rec := spanRecord{
		TraceID:    s.SpanContext().TraceID().String(),
		SpanID:     s.SpanContext().SpanID().String(),
		Name:       s.Name(),
		Kind:       s.SpanKind().String(),
		Start:      s.StartTime(),
		End:        s.EndTime(),
		DurationMS: millis(s.EndTime().Sub(s.StartTime())),
		Attributes: attrMap(s.Attributes()),
	}
	if p := s.Parent(); p.IsValid() {
		rec.ParentSpanID = p.SpanID().String()
	}
	switch st := s.Status(); st.Code {
	case codes.Error:
		rec.Status, rec.StatusDescription = "error", st.Description
	case codes.Ok:
		rec.Status = "ok"
	default:
		rec.Status = "unset"
	}
	for _, e := range s.Events() {
		rec.Events = append(rec.Events, spanEvent{Name: e.Name, Time: e.Time, Attributes: attrMap(e.Attributes)})
	}
	return rec
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// attrMap returns attributes as strings, long values cut, or nil for none.
func attrMap(kvs []attribute.KeyValue) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.Value.String()
		if len(v) > ringAttrValueMaxLen {
			v = strings.ToValidUTF8(v[:ringAttrValueMaxLen], "") + "…"
		}
		m[string(kv.Key)] = v
	}
	return m
}
