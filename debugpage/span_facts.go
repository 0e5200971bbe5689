package debugpage

import (
	"cmp"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/receiving"
)

// outcomeOf classifies a trace by its root span's facts f and, for
// errors, its other spans, the first that applies: cancelled (the root has
// vigil.cancel.cause; a cancelled request's response is also dropped, for
// the reason "cancelled"), dropped (a response_dropped event on the root:
// the peer went away, the writer closed), error (the root or another span
// has status Error, or the root has error.type, as a tool error), or ok.
// detail is the cancel cause, drop reason or error description.
func outcomeOf(f *spanFacts, spans []sdktrace.ReadOnlySpan) (traceOutcome, string) {
	if f.cause != "" {
		return outcomeCancelled, f.cause
	}
	if f.dropped {
		return outcomeDropped, f.drop
	}
	if f.status.Code == codes.Error || f.errType != "" {
		return outcomeError, cmp.Or(f.status.Description, f.errType)
	}
	for _, s := range spans {
		if st := s.Status(); st.Code == codes.Error {
			return outcomeError, cmp.Or(st.Description, s.Name()+" failed")
		}
	}
	return outcomeOK, ""
}

// attrString returns the string value of key in attrs, or "".
func attrString(attrs []attribute.KeyValue, key attribute.Key) string {
	for _, kv := range attrs {
		if kv.Key == key {
			return kv.Value.AsString()
		}
	}
	return ""
}

// spanFacts is what one pass over a span's attributes learns.
type spanFacts struct {
	bytes   int64  // estimated memory (spanBytes)
	compact bool   // over ringSpanMaxBytes, or holds values it cannot estimate (slices)
	cause   string // vigil.cancel.cause
	errType string // error.type
	status  sdktrace.Status
	dropped bool   // a response_dropped event
	drop    string // its vigil.drop.reason
}

// read estimates the memory s holds (the strings it refers to, and
// fixed costs per span and item), and reads the attributes outcomeOf
// needs, in one pass.
func (f *spanFacts) read(s sdktrace.ReadOnlySpan) {
	f.begin(s)
	for _, kv := range s.Attributes() {
		f.bytes += ringItemBaseBytes + int64(len(kv.Key))
		switch kv.Value.Type() {
		case attribute.STRING:
			v := kv.Value.AsString()
			f.bytes += int64(len(v))
			switch kv.Key {
			case mcpconv.CancelCauseKey:
				f.cause = v
			case errorTypeKey:
				f.errType = v
			}
		case attribute.BOOL, attribute.INT64, attribute.FLOAT64:
		default:
			f.compact = true
		}
	}
	f.end(s)
}

// readReceived is read for a span the provider handed over with what it
// saw of its attributes (see spanRing.WatchedAttributes): the same facts,
// without reading the attributes from the span.
func (f *spanFacts) readReceived(rs *receiving.ReceivedSpan) {
	f.begin(rs.Span)
	f.bytes += int64(rs.AttrCount)*ringItemBaseBytes + rs.AttrBytes
	f.compact = rs.AttrOpaque
	f.cause, f.errType = rs.Watched[watchCause], rs.Watched[watchErrorType]
	f.end(rs.Span)
}

// begin starts f over with what s has besides attributes, events and links.
func (f *spanFacts) begin(s sdktrace.ReadOnlySpan) {
	*f = spanFacts{}
	f.status = s.Status()
	f.bytes = ringSpanBaseBytes + int64(len(s.Name())) + int64(len(f.status.Description))
}

// end adds s's events, links and tracestate to f, after its attributes.
func (f *spanFacts) end(s sdktrace.ReadOnlySpan) {
	for _, e := range s.Events() {
		f.bytes += ringItemBaseBytes + int64(len(e.Name)) + attrsBytes(e.Attributes, &f.compact)
		if e.Name == mcpconv.EventResponseDropped && !f.dropped {
			f.dropped, f.drop = true, attrString(e.Attributes, mcpconv.DropReasonKey)
		}
	}
	for _, l := range s.Links() {
		f.bytes += ringItemBaseBytes + attrsBytes(l.Attributes, &f.compact)
	}
	if ts := s.SpanContext().TraceState(); ts.Len() > 0 { // a client's tracestate, from _meta
		ts.Walk(func(k, v string) bool {
			f.bytes += ringItemBaseBytes + int64(len(k)+len(v))
			return true
		})
	}
	f.compact = f.compact || f.bytes > ringSpanMaxBytes
}

// attrsBytes estimates the memory of attrs, setting *compact when one holds
// a value it cannot estimate.
func attrsBytes(attrs []attribute.KeyValue, compact *bool) int64 {
	var n int64
	for _, kv := range attrs {
		n += ringItemBaseBytes + int64(len(kv.Key))
		switch kv.Value.Type() {
		case attribute.STRING:
			n += int64(len(kv.Value.AsString()))
		case attribute.BOOL, attribute.INT64, attribute.FLOAT64:
		default:
			*compact = true
		}
	}
	return n
}

// errorTypeKey is the semconv error.type attribute.
const errorTypeKey = attribute.Key("error.type")

// compactSpan returns a copy of s that fits in ringSpanMaxBytes: no
// tracestate, keys and values cut at ringAttrValueMaxLen (slices written
// out as strings), and attributes, events and links kept while they fit,
// the others counted as dropped. It allocates: it runs for oversized spans only.
func compactSpan(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	stub := tracetest.SpanStubFromReadOnlySpan(s)
	budget := int64(ringSpanMaxBytes - ringSpanBaseBytes)
	take := func(n int64) bool {
		if n > budget {
			return false
		}
		budget -= n
		return true
	}
	stub.SpanContext = stub.SpanContext.WithTraceState(trace.TraceState{})
	stub.Parent = stub.Parent.WithTraceState(trace.TraceState{})
	stub.Name = cutString(stub.Name)
	stub.Status.Description = cutString(stub.Status.Description)
	take(int64(len(stub.Name) + len(stub.Status.Description)))
	cutAttrs := func(attrs []attribute.KeyValue) ([]attribute.KeyValue, int) {
		var out []attribute.KeyValue
		for i, kv := range attrs {
			kv = attribute.KeyValue{Key: attribute.Key(cutString(string(kv.Key))), Value: cutValue(kv.Value)}
			if !take(ringItemBaseBytes + int64(len(kv.Key)+len(kv.Value.AsString()))) {
				return out, len(attrs) - i
			}
			out = append(out, kv)
		}
		return out, 0
	}
	var lost int
	stub.Attributes, lost = cutAttrs(stub.Attributes)
	stub.DroppedAttributes += lost
	events := stub.Events[:0:0]
	for _, e := range stub.Events {
		e.Name = cutString(e.Name)
		if !take(ringItemBaseBytes + int64(len(e.Name))) {
			break
		}
		e.Attributes, lost = cutAttrs(e.Attributes)
		e.DroppedAttributeCount += lost
		events = append(events, e)
	}
	stub.DroppedEvents += len(stub.Events) - len(events)
	stub.Events = events
	links := stub.Links[:0:0]
	for _, l := range stub.Links {
		if !take(ringItemBaseBytes) {
			break
		}
		l.DroppedAttributeCount += len(l.Attributes)
		l.Attributes = nil
		links = append(links, l)
	}
	stub.DroppedLinks += len(stub.Links) - len(links)
	stub.Links = links
	return stub.Snapshot()
}

// cutString cuts s at ringAttrValueMaxLen bytes, on a rune boundary.
func cutString(s string) string {
	if len(s) <= ringAttrValueMaxLen {
		return s
	}
	i := ringAttrValueMaxLen
	for i > 0 && !utf8RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// cutValue returns v, a string cut at ringAttrValueMaxLen for a string or
// a slice (written out).
func cutValue(v attribute.Value) attribute.Value {
	switch v.Type() {
	case attribute.BOOL, attribute.INT64, attribute.FLOAT64:
		return v
	case attribute.STRING:
		return attribute.StringValue(cutString(v.AsString()))
	}
	return attribute.StringValue(cutString(v.String()))
}
