package main

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/telemetry/otelsetup"
)

// Tail-based retention of the in-memory trace ring.
//
// A trace is classified when its local root span ends (a span without a
// parent, or whose parent is remote: the SERVER span of a request); its
// children normally end, and so arrive, before it. The trace is then kept
// by some of these stores, each bounded by a count, and it is forgotten
// when none holds it any more:
//
//   - recent: the last ringLimits.Recent routine (successful) traces;
//   - slow: per key, the ringSlowPerKey traces with the longest root span,
//     whatever their outcome;
//   - error, cancelled, dropped: per outcome, the last ringClassTraces
//     traces overall, and per key and outcome the last ringClassPerKey, so
//     that a flood of one tool's failures does not push out another's;
//   - pending: up to ringPendingTraces traces whose root has not ended yet
//     (spans of requests still running), the oldest forgotten first.
//
// The key of a trace is its root span's name, "{mcp.method.name} {target}"
// (such as "tools/call echo"); at most ringMaxKeys distinct keys are
// tracked, names the server does not know (spanRing.knows) and later ones
// count under ringOtherKey. Besides the counts, the
// estimated size of the kept spans is bounded by ringLimits.MaxBytes: past
// it, the oldest routine traces go first, then the oldest pending ones,
// then the oldest of the others. A span that arrives for a trace already
// classified is added to it while the trace is kept.
const (
	ringMaxKeys        = 256       // distinct keys tracked; more count under ringOtherKey
	ringKeyMaxLen      = 128       // a longer root name counts under ringOtherKey
	ringOtherKey       = "(other)" // the key of traces beyond ringMaxKeys
	ringSlowPerKey     = 5         // slowest traces kept per key
	ringClassPerKey    = 2         // last errored, cancelled, dropped traces kept per key and outcome
	ringClassTraces    = 50        // last errored, cancelled, dropped traces kept per outcome
	ringPendingTraces  = 128       // traces kept whose root has not ended
	ringSpanMaxBytes   = 8 << 10   // a span estimated larger is stored compacted
	ringTraceMaxBytes  = 256 << 10 // spans of a trace beyond this estimate are counted, not kept
	ringMaxBytes       = 16 << 20  // the estimated size of all kept spans
	ringSpanBaseBytes  = 512       // estimate of a stored span besides its strings
	ringItemBaseBytes  = 96        // estimate of an attribute, event or link besides its strings
	ringSlotBytes      = 640       // estimate of a trace's bookkeeping (struct, map entry, store slots, span slice up to ringFreeSpansCap)
	ringKeySlotBytes   = 384       // estimate of a key's bookkeeping, its name included
	ringFreeSpansCap   = 16        // a freed trace keeps its span slice for reuse up to this capacity
	ringOutcomeClasses = 3         // error, cancelled, dropped
)

// traceOutcome is how a trace's request ended.
type traceOutcome uint8

const (
	outcomeOK traceOutcome = iota
	outcomeError
	outcomeCancelled
	outcomeDropped
)

func (o traceOutcome) String() string {
	switch o {
	case outcomeError:
		return "error"
	case outcomeCancelled:
		return "cancelled"
	case outcomeDropped:
		return "dropped"
	}
	return "ok"
}

// Trace classes, as traceFilter.Class and traceSummary.Classes name them:
// why a trace is kept.
const (
	classRecent    = "recent"    // among the last routine traces
	classSlow      = "slow"      // among the slowest of its key
	classError     = "error"     // failed (status error, a tool error)
	classCancelled = "cancelled" // cancelled, vigil.cancel.cause says why
	classDropped   = "dropped"   // its response was not written
	classPending   = "pending"   // its local root has not ended (children of a running request)
)

// ringLimits are the bounds of a spanRing.
type ringLimits struct {
	Recent   int   // routine traces kept (at least 1)
	MaxBytes int64 // estimated size of all kept spans
}

// keyStore is what the ring keeps per key.
type keyStore struct {
	name string
	slow [ringSlowPerKey]*ringTrace
	last [ringOutcomeClasses][ringClassPerKey]*ringTrace // per outcome (error, cancelled, dropped), a circular buffer
	next [ringOutcomeClasses]int
}

// traceFIFO is a circular buffer of traces that may have holes (a trace
// forgotten for another reason leaves nil in its slot).
type traceFIFO struct {
	slots []*ringTrace
	next  int // the slot written next: the oldest once full
}

func newTraceFIFO(n int) traceFIFO { return traceFIFO{slots: make([]*ringTrace, n)} }

// push stores t and returns the trace it took the place of, or nil, and
// t's position.
func (f *traceFIFO) push(t *ringTrace) (old *ringTrace, pos int) {
	pos = f.next
	old = f.slots[pos]
	f.slots[pos] = t
	if f.next = pos + 1; f.next == len(f.slots) {
		f.next = 0
	}
	return old, pos
}

// oldest returns the oldest trace, or nil.
func (f *traceFIFO) oldest() *ringTrace {
	for i := range f.slots {
		if t := f.slots[(f.next+i)%len(f.slots)]; t != nil {
			return t
		}
	}
	return nil
}

// ringTrace is a trace the ring keeps.
type ringTrace struct {
	id      trace.TraceID
	spans   []sdktrace.ReadOnlySpan // at most ringSpansPerTrace
	dropped int                     // spans not kept (beyond ringSpansPerTrace or ringTraceMaxBytes)
	bytes   int64                   // estimated size of spans

	// Set when the local root ends.
	done    bool
	key     int // index in spanRing.keys
	outcome traceOutcome
	detail  string // the cancel cause, drop reason or error description
	start   time.Time
	dur     time.Duration // of the root span
	seq     uint64        // classification order
	root    sdktrace.ReadOnlySpan

	// Where it is kept: positions in the FIFOs (-1: not there), flags for
	// the per-key stores; refs counts them.
	refs      int
	pendPos   int
	recentPos int
	classPos  int
	slow      bool
	keyLast   bool
}

// exportLocked stores spans in their traces, classifying a trace when its
// local root arrives, and forgets traces beyond the limits. Once the ring
// is in a steady state, it allocates nothing for spans of ordinary size
// (an oversized one is copied, compacted). r.mu must be held.
func (r *spanRing) exportLocked(spans []sdktrace.ReadOnlySpan) {
	var last *ringTrace // spans of one trace often come together
	var f spanFacts
	for _, s := range spans {
		f.read(s)
		last = r.storeLocked(s, &f, last)
	}
}

// storeLocked stores s, whose facts are f, in its trace, which is last
// when last is not nil and has s's trace id, and returns the trace to try
// first for the next span (nil when it may be gone). r.mu must be held.
func (r *spanRing) storeLocked(s sdktrace.ReadOnlySpan, f *spanFacts, last *ringTrace) *ringTrace {
	id := s.SpanContext().TraceID()
	t := last
	if t == nil || t.id != id {
		t = r.traces[id]
	}
	fresh := t == nil
	if fresh {
		t = r.alloc(id)
	}
	if f.compact {
		s = compactSpan(s)
		f.read(s)
	}
	n := f.bytes
	if len(t.spans) >= ringSpansPerTrace || t.bytes+n > ringTraceMaxBytes {
		t.dropped++
	} else {
		t.spans = append(t.spans, s)
		t.bytes += n
		r.bytes += n
	}
	p := s.Parent()
	switch root := !p.IsValid() || p.IsRemote(); {
	case root && !t.done:
		r.classify(t, s, f)
	case root:
		r.reclassify(t, f) // another request of the same trace
	case fresh:
		r.pend(t)
	}
	if r.bytes > r.lim.MaxBytes {
		r.shed(t)
		return nil // t may be gone
	}
	return t
}

// alloc returns a new trace, stored in r.traces but in no store yet.
func (r *spanRing) alloc(id trace.TraceID) *ringTrace {
	var t *ringTrace
	if n := len(r.free); n > 0 {
		t, r.free = r.free[n-1], r.free[:n-1]
	} else {
		t = &ringTrace{}
	}
	t.id, t.pendPos, t.recentPos, t.classPos = id, -1, -1, -1
	r.traces[id] = t
	return t
}

// release forgets t, which no store holds any more.
func (r *spanRing) release(t *ringTrace) {
	delete(r.traces, t.id)
	r.bytes -= t.bytes
	clear(t.spans) // let the forgotten spans go
	spans := t.spans[:0]
	if cap(spans) > ringFreeSpansCap {
		spans = nil
	}
	*t = ringTrace{spans: spans}
	r.free = append(r.free, t)
}

// unref drops one store's hold on t, forgetting it when none is left.
func (r *spanRing) unref(t *ringTrace) {
	if t == nil {
		return
	}
	if t.refs--; t.refs <= 0 {
		r.release(t)
	}
}

// pend keeps t, whose root has not ended, among the pending traces.
func (r *spanRing) pend(t *ringTrace) {
	old, pos := r.pending.push(t)
	t.pendPos = pos
	t.refs++
	if old != nil {
		old.pendPos = -1
		r.unref(old)
	}
}

// classify files t, whose local root span root has just arrived.
func (r *spanRing) classify(t *ringTrace, root sdktrace.ReadOnlySpan, f *spanFacts) {
	t.refs++ // held while it moves
	if t.pendPos >= 0 {
		r.pending.slots[t.pendPos] = nil
		t.pendPos = -1
		t.refs--
	}
	t.done = true
	t.key = r.keyOf(root.Name())
	t.outcome, t.detail = outcomeOf(f, t.spans)
	t.detail = cutString(t.detail)
	t.start, t.dur, t.root = root.StartTime(), root.EndTime().Sub(root.StartTime()), root
	r.seq++
	t.seq = r.seq
	if t.outcome == outcomeOK {
		old, pos := r.recent.push(t)
		t.recentPos = pos
		t.refs++
		if old != nil {
			old.recentPos = -1
			r.unref(old)
		}
	} else {
		r.keepFailed(t)
	}
	r.keepIfSlow(t)
	r.unref(t)
}

// reclassify looks at another local root of the already classified t (a
// client that propagates one trace through several requests): a failure
// there keeps t as a failed trace.
func (r *spanRing) reclassify(t *ringTrace, f *spanFacts) {
	if t.outcome != outcomeOK {
		return
	}
	if o, detail := outcomeOf(f, nil); o != outcomeOK {
		t.refs++
		t.outcome, t.detail = o, cutString(detail)
		r.keepFailed(t)
		r.unref(t)
	}
}

// keepFailed keeps the failed t in its outcome's stores.
func (r *spanRing) keepFailed(t *ringTrace) {
	c := int(t.outcome) - 1
	old, pos := r.classes[c].push(t)
	t.classPos = pos
	t.refs++
	if old != nil {
		old.classPos = -1
		r.unref(old)
	}
	ks := &r.keys[t.key]
	i := ks.next[c]
	ks.next[c] = (i + 1) % ringClassPerKey
	old = ks.last[c][i]
	ks.last[c][i] = t
	t.keyLast = true
	t.refs++
	if old != nil {
		old.keyLast = slices.Contains(ks.last[c][:], old)
		r.unref(old)
	}
}

// keepIfSlow keeps t among the slowest of its key if it is.
func (r *spanRing) keepIfSlow(t *ringTrace) {
	ks := &r.keys[t.key]
	victim := -1
	for i, o := range ks.slow {
		if o == nil {
			victim = i
			break
		}
		if victim < 0 || o.dur < ks.slow[victim].dur {
			victim = i
		}
	}
	old := ks.slow[victim]
	if old != nil && old.dur >= t.dur {
		return
	}
	ks.slow[victim] = t
	t.slow = true
	t.refs++
	if old != nil {
		old.slow = false
		r.unref(old)
	}
}

// keyOf returns the index of name's key, adding it while there is room.
func (r *spanRing) keyOf(name string) int {
	if r.lastKey >= 0 && r.keys[r.lastKey].name == name { // spans of one key often come together
		return r.lastKey
	}
	if i, ok := r.keyIndex[name]; ok {
		r.lastKey = i
		return i
	}
	if len(name) > ringKeyMaxLen || len(r.keys) >= ringMaxKeys || !r.knows(name) {
		name = ringOtherKey
		if i, ok := r.keyIndex[name]; ok {
			return i
		}
	}
	name = strings.Clone(name) // not a part of a span's memory
	r.keys = append(r.keys, keyStore{name: name})
	r.keyIndex[name] = len(r.keys) - 1
	return len(r.keys) - 1
}

// knows reports whether name, a root span's "{method} {target}", may be a
// key: whether the server set by keyByServer has that method, tool or
// prompt (every name does until one is set). Names a client made up count
// under ringOtherKey, so that they never take the place of a real one.
func (r *spanRing) knows(name string) bool {
	srv := r.server.Load()
	if srv == nil {
		return true
	}
	method, target, _ := strings.Cut(name, " ")
	switch {
	case !srv.HasMethod(method):
		return false
	case target == "":
		return true
	case method == "tools/call":
		return srv.HasTool(target)
	case method == "prompts/get":
		return srv.HasPrompt(target)
	}
	return false
}

// keyByServer makes srv's methods, tools and prompts the only keys of r
// besides ringOtherKey (see knows).
func (r *spanRing) keyByServer(srv *server.Server) { r.server.Store(srv) }

// shed forgets traces until the kept spans fit in r.lim.MaxBytes: the
// oldest routine ones first, then the oldest pending ones, then the
// oldest others, sparing current (the trace being added to) while another
// is left.
func (r *spanRing) shed(current *ringTrace) {
	for r.bytes > r.lim.MaxBytes {
		victim := r.recent.oldest()
		if victim == nil || victim == current {
			victim = r.pending.oldest()
		}
		if victim == nil || victim == current {
			victim = nil
			for _, t := range r.traces {
				if t != current && (victim == nil || t.seq < victim.seq) {
					victim = t
				}
			}
		}
		if victim == nil {
			victim = current
		}
		r.forget(victim)
		if victim == current {
			return
		}
	}
}

// forget removes t from every store, and so forgets it.
func (r *spanRing) forget(t *ringTrace) {
	t.refs = 1 // the last hold, dropped below
	if t.pendPos >= 0 {
		r.pending.slots[t.pendPos] = nil
	}
	if t.recentPos >= 0 {
		r.recent.slots[t.recentPos] = nil
	}
	if t.classPos >= 0 {
		r.classes[int(t.outcome)-1].slots[t.classPos] = nil
	}
	if t.done {
		ks := &r.keys[t.key]
		if t.slow {
			for i, o := range ks.slow {
				if o == t {
					ks.slow[i] = nil
				}
			}
		}
		if t.keyLast {
			for c := range ks.last {
				for i, o := range ks.last[c] {
					if o == t {
						ks.last[c][i] = nil
					}
				}
			}
		}
	}
	r.unref(t)
}

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
			case telemetry.CancelCauseKey:
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
func (f *spanFacts) readReceived(rs *otelsetup.ReceivedSpan) {
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
		if e.Name == telemetry.EventResponseDropped && !f.dropped {
			f.dropped, f.drop = true, attrString(e.Attributes, telemetry.DropReasonKey)
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

// ringMemory is the ring's memory, estimated.
type ringMemory struct {
	Bytes  int64 `json:"bytes"`  // now
	Bound  int64 `json:"bound"`  // at worst
	Traces int   `json:"traces"` // traces kept
	Spans  int   `json:"spans"`  // spans kept
	Keys   int   `json:"keys"`   // method/tool keys tracked
}

// maxSlots is the most traces the stores of a ring with limits lim can
// hold at once.
func (lim ringLimits) maxSlots() int64 {
	return int64(ringPendingTraces + lim.Recent + ringOutcomeClasses*ringClassTraces +
		(ringMaxKeys+1)*(ringSlowPerKey+ringOutcomeClasses*ringClassPerKey))
}

// bound is the worst-case estimate of a ring's memory: its span budget
// (exceeded by at most one span while a trace is added), the spans of a
// batch waiting on the intake (each compacted to ringSpanMaxBytes at
// most), the bookkeeping of the most traces its stores can hold (a freed
// trace is reused, so there are never more), and that of the most keys.
func (lim ringLimits) bound() int64 {
	return lim.MaxBytes + ringSpanMaxBytes + ringIntakeBatch*ringSpanMaxBytes +
		lim.maxSlots()*ringSlotBytes + (ringMaxKeys+1)*ringKeySlotBytes
}

// memory returns the ring's estimated memory now and at worst.
func (r *spanRing) memory() ringMemory {
	r.lock()
	defer r.unlock()
	m := ringMemory{Traces: len(r.traces), Keys: len(r.keys), Bound: r.lim.bound()}
	for _, t := range r.traces {
		m.Spans += len(t.spans)
	}
	m.Bytes = r.bytes + int64(len(r.traces)+len(r.free))*ringSlotBytes + int64(len(r.keys))*ringKeySlotBytes
	return m
}
