package main

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Defaults of the in-memory trace ring.
const (
	defaultRingTraces   = 100 // traces kept
	ringSpansPerTrace   = 256 // spans kept per trace; more are counted, not kept
	ringAttrValueMaxLen = 256 // longer attribute values are cut
)

// spanRing is a span exporter that keeps the spans of the last maxTraces
// traces in memory, for the /debug/vigil page. A trace is "new" when its
// first span arrives; when the ring is full, the trace that arrived first is
// forgotten. Each trace keeps at most ringSpansPerTrace spans. It is safe for
// concurrent use; Shutdown keeps what was stored.
//
// Exporting runs for every span the binary ends, and the page is rendered
// rarely: the ring keeps the SDK's read-only spans as they are (immutable
// snapshots, which the SDK allocated anyway) and formats them only in
// snapshot. In a full ring, a new trace takes the place, and the storage,
// of the oldest, so that exporting allocates nothing once the ring is full.
type spanRing struct {
	mu     sync.Mutex
	order  []*ringTrace // a circular buffer of at most maxTraces, oldest at head
	head   int          // index in order of the oldest trace once order is full
	traces map[trace.TraceID]*ringTrace
}

var _ sdktrace.SpanExporter = (*spanRing)(nil)

type ringTrace struct {
	id      trace.TraceID
	spans   []sdktrace.ReadOnlySpan // at most ringSpansPerTrace
	dropped int                     // spans not kept beyond ringSpansPerTrace
}

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
// parent before its children, siblings by start time).
type traceView struct {
	TraceID      string       `json:"trace_id"`
	Root         string       `json:"root"` // the name of the first root span
	Start        time.Time    `json:"start"`
	DurationMS   float64      `json:"duration_ms"`
	Error        bool         `json:"error"` // some span has status error
	Spans        []spanRecord `json:"spans"`
	DroppedSpans int          `json:"dropped_spans,omitempty"`
}

// newSpanRing returns a ring that keeps maxTraces traces (at least 1).
func newSpanRing(maxTraces int) *spanRing {
	n := max(maxTraces, 1)
	return &spanRing{order: make([]*ringTrace, 0, n), traces: make(map[trace.TraceID]*ringTrace, n)}
}

// ExportSpans stores spans, forgetting the oldest traces beyond the limit.
func (r *spanRing) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last *ringTrace // spans of one trace often come together
	for _, s := range spans {
		id := s.SpanContext().TraceID()
		t := last
		if t == nil || t.id != id {
			t = r.traces[id]
			if t == nil {
				t = r.add(id)
			}
			last = t
		}
		if len(t.spans) >= ringSpansPerTrace {
			t.dropped++
			continue
		}
		t.spans = append(t.spans, s)
	}
	return nil
}

// add stores a new, empty trace, in place of the oldest when the ring is
// full. r.mu must be held.
func (r *spanRing) add(id trace.TraceID) *ringTrace {
	if len(r.order) < cap(r.order) {
		t := &ringTrace{id: id}
		r.order = append(r.order, t)
		r.traces[id] = t
		return t
	}
	t := r.order[r.head]
	r.head = (r.head + 1) % len(r.order)
	delete(r.traces, t.id)
	clear(t.spans) // let the forgotten spans go
	*t = ringTrace{id: id, spans: t.spans[:0]}
	r.traces[id] = t
	return t
}

// Shutdown does nothing: the stored spans stay readable.
func (*spanRing) Shutdown(context.Context) error { return nil }

// snapshot returns the stored traces, newest first. The result is a copy.
func (r *spanRing) snapshot() []traceView {
	type stored struct {
		id      trace.TraceID
		spans   []sdktrace.ReadOnlySpan
		dropped int
	}
	r.mu.Lock()
	kept := make([]stored, len(r.order))
	for i := range kept { // newest first
		t := r.order[(r.head+len(r.order)-1-i)%len(r.order)]
		kept[i] = stored{id: t.id, spans: slices.Clone(t.spans), dropped: t.dropped}
	}
	r.mu.Unlock()
	out := make([]traceView, len(kept))
	for i, t := range kept {
		recs := make([]spanRecord, len(t.spans))
		for j, s := range t.spans {
			recs[j] = recordOf(s)
		}
		out[i] = traceView{TraceID: t.id.String(), Spans: recs, DroppedSpans: t.dropped}
		out[i].arrange()
	}
	return out
}

// arrange puts the spans of v in tree order with their depths, and fills in
// the trace's summary.
func (v *traceView) arrange() {
	spans := v.Spans
	slices.SortStableFunc(spans, func(a, b spanRecord) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.SpanID, b.SpanID))
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
