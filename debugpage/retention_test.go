package debugpage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// synthSpan describes a synthetic ended span: trace tid, span sid, parent
// span parent (0: none) of the same trace, remote or local.
type synthSpan struct {
	name         string
	tid, sid     uint64
	parent       uint64
	remoteParent bool
	kind         trace.SpanKind
	start        time.Time
	dur          time.Duration
	status       codes.Code
	desc         string
	attrs        []attribute.KeyValue
	events       []sdktrace.Event
}

func synthTraceID(n uint64) trace.TraceID {
	var id trace.TraceID
	for i := range 8 {
		id[8+i] = byte(n >> (56 - 8*i))
	}
	id[0] = 0xab
	return id
}

func synthSpanID(n uint64) trace.SpanID {
	var id trace.SpanID
	for i := range 8 {
		id[i] = byte(n >> (56 - 8*i))
	}
	id[0] |= 0x80
	return id
}

// stub returns s as a read-only span.
func (s synthSpan) stub() tracetest.SpanStub {
	tid := synthTraceID(s.tid)
	st := tracetest.SpanStub{
		Name:        s.name,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: synthSpanID(s.sid), TraceFlags: trace.FlagsSampled}),
		SpanKind:    cmpKind(s.kind),
		StartTime:   s.start,
		EndTime:     s.start.Add(s.dur),
		Status:      sdktrace.Status{Code: s.status, Description: s.desc},
		Attributes:  s.attrs,
		Events:      s.events,
	}
	if s.parent != 0 {
		st.Parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: synthSpanID(s.parent), TraceFlags: trace.FlagsSampled, Remote: s.remoteParent})
	}
	return st
}

func cmpKind(k trace.SpanKind) trace.SpanKind {
	if k == trace.SpanKindUnspecified {
		return trace.SpanKindServer
	}
	return k
}

// export feeds spans to ring, in one batch.
func export(t testing.TB, ring *spanRing, spans ...synthSpan) {
	t.Helper()
	stubs := make(tracetest.SpanStubs, len(spans))
	for i, s := range spans {
		stubs[i] = s.stub()
	}
	require.NoError(t, ring.ExportSpans(context.Background(), stubs.Snapshots()))
}

// okCall is the root span of a successful tools/call of tool.
func okCall(tid uint64, tool string, start time.Time, dur time.Duration) synthSpan {
	return synthSpan{
		name: "tools/call " + tool, tid: tid, sid: 1, start: start, dur: dur,
		attrs: []attribute.KeyValue{attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", tool)},
	}
}

// toolErrorCall is the root span of a tools/call of tool answered with a
// tool error, as middleware.WithTracerProvider ends it.
func toolErrorCall(tid uint64, tool string, start time.Time) synthSpan {
	s := okCall(tid, tool, start, time.Millisecond)
	s.status = codes.Error
	s.attrs = append(s.attrs, attribute.String("error.type", "tool_error"))
	return s
}

// spanBytesOf returns the estimated size of the spans ring keeps.
func spanBytesOf(ring *spanRing) int64 {
	ring.mu.Lock()
	defer ring.mu.Unlock()
	return ring.bytes
}

// traceOf looks up the synthetic trace tid.
func traceOf(t *testing.T, ring *spanRing, tid uint64) (traceView, bool) {
	t.Helper()
	return ring.lookup(synthTraceID(tid))
}

// One failed call, then 100,000 successful ones: the failure is still
// kept, the routine traces are the last DefaultTraceRing, and the ring's
// estimated memory stays under its bound all along.
func TestSpanRingKeepsFailureAfterManySuccesses(t *testing.T) {
	ring := newSpanRing(DefaultTraceRing)
	t0 := time.Unix(1_700_000_000, 0)
	export(t, ring, toolErrorCall(1, "echo", t0))
	bound := ring.memory().Bound
	const calls, batch = 100_000, 1000
	spans := make([]synthSpan, batch)
	for i := 0; i < calls; i += batch {
		for j := range spans {
			n := uint64(i + j + 2)
			// Slower than the failure: it is not kept as one of the slowest.
			spans[j] = okCall(n, "echo", t0.Add(time.Duration(n)*time.Millisecond), 2*time.Millisecond)
		}
		export(t, ring, spans...)
		m := ring.memory()
		require.LessOrEqual(t, m.Bytes, m.Bound, "after %d calls", i+batch)
		require.Equal(t, bound, m.Bound, "the bound is fixed")
	}
	v, ok := traceOf(t, ring, 1)
	require.True(t, ok, "the failed call's trace is kept")
	assert.Equal(t, "error", v.Outcome)
	assert.Equal(t, "tool_error", v.Detail)
	assert.Equal(t, "tools/call echo", v.Key)
	assert.Equal(t, []string{classError}, v.Classes)
	errs := ring.list(traceFilter{Class: classError})
	require.Len(t, errs, 1)
	assert.Equal(t, synthTraceID(1).String(), errs[0].TraceID)
	recent := ring.list(traceFilter{Class: classRecent})
	require.Len(t, recent, DefaultTraceRing)
	assert.Equal(t, synthTraceID(calls+1).String(), recent[0].TraceID, "newest first")
	m := ring.memory()
	assert.LessOrEqual(t, m.Traces, DefaultTraceRing+1+ringSlowPerKey, "the last routine ones, the failure, the slowest")
	assert.Less(t, m.Bound, int64(24<<20), "the bound printed on the page")
	t.Logf("memory after %d calls: %d bytes (%d traces, %d spans); bound %d bytes", calls+1, m.Bytes, m.Traces, m.Spans, m.Bound)
}

// Outcomes: a cancel cause, a dropped response, an error in a child span;
// a flood of one tool's failures does not push out another tool's.
func TestSpanRingClassifiesOutcomes(t *testing.T) {
	ring := newSpanRing(10)
	t0 := time.Unix(1_700_000_000, 0)
	cancelled := okCall(1, "sleep", t0, time.Second)
	cancelled.attrs = append(cancelled.attrs, attribute.String("vigil.cancel.cause", "client_cancel"))
	cancelled.events = []sdktrace.Event{
		{Name: "cancelled", Time: t0.Add(time.Second), Attributes: []attribute.KeyValue{attribute.String("vigil.cancel.cause", "client_cancel")}},
		{Name: "response_dropped", Time: t0.Add(time.Second), Attributes: []attribute.KeyValue{attribute.String("vigil.drop.reason", "cancelled")}},
	}
	dropped := okCall(2, "echo", t0, time.Millisecond)
	dropped.events = []sdktrace.Event{{Name: "response_dropped", Time: t0, Attributes: []attribute.KeyValue{attribute.String("vigil.drop.reason", "peer_gone")}}}
	childFailed := okCall(3, "confirm_action", t0, 5*time.Millisecond)
	child := synthSpan{name: "elicitation/create", tid: 3, sid: 2, parent: 1, kind: trace.SpanKindClient, start: t0, dur: time.Millisecond, status: codes.Error, desc: "declined"}
	export(t, ring, cancelled, dropped, child, childFailed)
	for tid, want := range map[uint64][2]string{1: {"cancelled", "client_cancel"}, 2: {"dropped", "peer_gone"}, 3: {"error", "declined"}} {
		v, ok := traceOf(t, ring, tid)
		require.True(t, ok, tid)
		assert.Equal(t, want, [2]string{v.Outcome, v.Detail}, tid)
		assert.True(t, v.Complete)
	}
	v, _ := traceOf(t, ring, 3)
	require.Len(t, v.Spans, 2, "the child that ended first belongs to the trace")
	assert.Equal(t, []int{0, 1}, []int{v.Spans[0].Depth, v.Spans[1].Depth})

	// 200 errors of echo: the last ringClassTraces are kept overall, and
	// the confirm_action failure as one of the last of its key.
	for i := range 200 {
		export(t, ring, toolErrorCall(uint64(100+i), "echo", t0.Add(time.Duration(i)*time.Millisecond)))
	}
	_, ok := traceOf(t, ring, 3)
	assert.True(t, ok, "another tool's failure is kept")
	echoErrs := len(ring.list(traceFilter{Class: classError, Key: "tools/call echo"}))
	assert.GreaterOrEqual(t, echoErrs, ringClassTraces, "the last ones")
	assert.LessOrEqual(t, echoErrs, ringClassTraces+ringSlowPerKey, "and those among the slowest")
	assert.Len(t, ring.list(traceFilter{Class: classError, Key: "tools/call confirm_action"}), 1)
	assert.Len(t, ring.list(traceFilter{Class: classCancelled}), 1)
	assert.Len(t, ring.list(traceFilter{Class: classDropped}), 1)
}

// Per key, the slowest traces are kept, slowest first, whatever their
// order of arrival; others are forgotten once out of the routine ring.
func TestSpanRingKeepsSlowestPerKey(t *testing.T) {
	ring := newSpanRing(10)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 1000 {
		d := time.Duration((i*7919)%1000+1) * time.Millisecond // 1..1000 ms, shuffled
		export(t, ring, okCall(uint64(i+1), "sleep", t0.Add(time.Duration(i)*time.Second), d))
		export(t, ring, okCall(uint64(10_000+i), "echo", t0.Add(time.Duration(i)*time.Second), time.Duration(i%7)*time.Millisecond))
	}
	slow := ring.list(traceFilter{Key: "tools/call sleep", Class: classSlow})
	var durs []float64
	for _, s := range slow {
		durs = append(durs, s.DurationMS)
		assert.Contains(t, s.Classes, classSlow)
	}
	assert.Equal(t, []float64{1000, 999, 998, 997, 996}, durs)
	echo := ring.list(traceFilter{Key: "tools/call echo", Class: classSlow})
	require.Len(t, echo, ringSlowPerKey)
	for _, s := range echo {
		assert.InDelta(t, 6.0, s.DurationMS, 1e-9)
	}
	assert.Len(t, ring.list(traceFilter{Class: classRecent}), 10)
	assert.Len(t, ring.list(traceFilter{}), 10+2*ringSlowPerKey, "no trace is both recent and among the slowest here")
	assert.Len(t, ring.list(traceFilter{Limit: 3}), 3)
}

// At most ringMaxKeys keys are tracked; the traces of later ones, and of
// names too long, count under ringOtherKey.
func TestSpanRingCapsKeys(t *testing.T) {
	ring := newSpanRing(10)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range ringMaxKeys + 50 {
		export(t, ring, okCall(uint64(i+1), fmt.Sprintf("tool%d", i), t0, time.Millisecond))
	}
	export(t, ring, okCall(100_000, strings.Repeat("x", ringKeyMaxLen), t0, time.Millisecond))
	names := ring.keyNames()
	require.Len(t, names, ringMaxKeys+1)
	assert.Equal(t, ringOtherKey, names[ringMaxKeys])
	v, ok := traceOf(t, ring, ringMaxKeys+50)
	require.True(t, ok)
	assert.Equal(t, ringOtherKey, v.Key)
	v, ok = traceOf(t, ring, 100_000)
	require.True(t, ok)
	assert.Equal(t, ringOtherKey, v.Key)
	assert.Equal(t, "tools/call tool0", ring.list(traceFilter{Key: "tools/call tool0"})[0].Key)
	m := ring.memory()
	assert.LessOrEqual(t, m.Bytes, m.Bound)
}

// A trace is classified when its local root (no parent, or a remote one)
// ends; children that end first wait, pending; a span that arrives after
// the root joins its trace.
func TestSpanRingClassifiesAtLocalRoot(t *testing.T) {
	ring := newSpanRing(10)
	t0 := time.Unix(1_700_000_000, 0)
	child := synthSpan{name: "elicitation/create", tid: 1, sid: 2, parent: 1, kind: trace.SpanKindClient, start: t0, dur: time.Millisecond}
	export(t, ring, child)
	pending := ring.list(traceFilter{})
	require.Len(t, pending, 1)
	assert.False(t, pending[0].Complete)
	assert.Equal(t, []string{classPending}, pending[0].Classes)
	assert.Equal(t, pending, ring.list(traceFilter{Class: classPending}))
	assert.Empty(t, ring.list(traceFilter{Class: classRecent}))

	root := okCall(1, "confirm_action", t0, 3*time.Millisecond)
	root.parent, root.remoteParent = 99, true // the client's span, from _meta
	export(t, ring, root)
	late := synthSpan{name: "late", tid: 1, sid: 3, parent: 2, kind: trace.SpanKindInternal, start: t0, dur: time.Millisecond}
	export(t, ring, late)
	v, ok := traceOf(t, ring, 1)
	require.True(t, ok)
	assert.True(t, v.Complete)
	assert.Equal(t, "tools/call confirm_action", v.Key)
	var names []string
	for _, s := range v.Spans {
		names = append(names, fmt.Sprint(s.Depth, " ", s.Name))
	}
	assert.Equal(t, []string{"0 tools/call confirm_action", "1 elicitation/create", "2 late"}, names)

	// Pending traces are bounded: the oldest are forgotten.
	for i := range ringPendingTraces + 10 {
		export(t, ring, synthSpan{name: "child", tid: uint64(1000 + i), sid: 2, parent: 1, start: t0, dur: time.Millisecond})
	}
	_, ok = traceOf(t, ring, 1000)
	assert.False(t, ok, "the oldest pending trace is forgotten")
	_, ok = traceOf(t, ring, uint64(1000+ringPendingTraces+9))
	assert.True(t, ok)
	assert.Len(t, ring.list(traceFilter{}), 1+ringPendingTraces)
	assert.Len(t, ring.list(traceFilter{Class: classPending}), ringPendingTraces)
}

// The estimated size of the kept spans stays within the ring's byte
// budget: routine traces go first; an oversized span is kept compacted.
func TestSpanRingByteBudget(t *testing.T) {
	const budget = 64 << 10
	ring := newSpanRingLimits(ringLimits{Recent: 1000, MaxBytes: budget})
	t0 := time.Unix(1_700_000_000, 0)
	big := toolErrorCall(1, "echo", t0)
	big.attrs = append(big.attrs, attribute.String("huge", strings.Repeat("<x>", 1<<20)), attribute.StringSlice("list", []string{"a", "b"}))
	export(t, ring, big)
	// A client's tracestate of the most members, each as long as allowed.
	var ts trace.TraceState
	for i := range 32 {
		var err error
		ts, err = ts.Insert(fmt.Sprintf("k%d%s", i, strings.Repeat("k", 200)), strings.Repeat("v", 250))
		require.NoError(t, err)
	}
	stated := okCall(5000, "echo", t0, time.Millisecond).stub()
	stated.SpanContext = stated.SpanContext.WithTraceState(ts)
	var f spanFacts
	f.read(stated.Snapshot())
	assert.True(t, f.compact, "the tracestate counts: %d bytes", f.bytes)
	require.NoError(t, ring.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{stated.Snapshot()}))
	ring.mu.Lock()
	kept := ring.traces[synthTraceID(5000)].spans[0]
	ring.mu.Unlock()
	assert.Zero(t, kept.SpanContext().TraceState().Len(), "kept compacted, without its tracestate")
	f.read(kept)
	assert.LessOrEqual(t, f.bytes, int64(ringSpanMaxBytes))
	for i := range 2000 {
		export(t, ring, okCall(uint64(i+2), "echo", t0.Add(time.Duration(i)*time.Millisecond), time.Millisecond))
		require.LessOrEqual(t, spanBytesOf(ring), int64(budget))
	}
	v, ok := traceOf(t, ring, 1)
	require.True(t, ok, "the failure outlives the routine traces")
	huge := v.Spans[0].Attributes["huge"]
	assert.LessOrEqual(t, len(huge), ringAttrValueMaxLen+len("…"))
	assert.True(t, strings.HasPrefix(huge, "<x><x>"))
	assert.Equal(t, `["a","b"]`, v.Spans[0].Attributes["list"])
	recent := ring.list(traceFilter{Class: classRecent})
	assert.Less(t, len(recent), 1000, "the budget, not the count, bounds them")
	assert.NotEmpty(t, recent)
	assert.Equal(t, synthTraceID(2001).String(), recent[0].TraceID)
}

// Through the SDK: a trace keeps at most ringSpansPerTrace spans, and the
// per-trace byte bound holds.
func TestSpanRingTraceBound(t *testing.T) {
	ring := newSpanRing(2)
	tracer := ringProvider(t, ring)
	ctx, root := tracer.Start(context.Background(), "root")
	for range 100 {
		_, s := tracer.Start(ctx, "child", trace.WithAttributes(attribute.String("v", strings.Repeat("y", 4000))))
		s.End()
	}
	root.End()
	got := ring.snapshot()
	require.Len(t, got, 1)
	assert.Less(t, len(got[0].Spans), 100)
	assert.Equal(t, 101, len(got[0].Spans)+got[0].DroppedSpans)
	assert.True(t, got[0].Complete, "the root is counted even when not kept")
}

// The fixed costs the memory estimate counts cover the structures they
// stand for: the SDK's span snapshot, attributes, events and links; a
// trace's bookkeeping with a reused span slice, its map entry and store
// slots; a key's.
func TestSpanRingEstimatesCoverStructs(t *testing.T) {
	ring := newSpanRing(1)
	_, s := ringProvider(t, ring).Start(context.Background(), "s")
	s.End()
	snap := ring.snapshot()
	require.Len(t, snap, 1)
	var span sdktrace.ReadOnlySpan
	for _, tr := range ring.traces {
		span = tr.spans[0]
	}
	ty := reflect.TypeOf(span)
	if ty.Kind() == reflect.Pointer {
		ty = ty.Elem()
	}
	const ifaceBytes, ptrBytes, mapEntryBytes = 16, 8, 64
	assert.LessOrEqual(t, ty.Size()+ifaceBytes, uintptr(ringSpanBaseBytes), ty.String())
	for name, size := range map[string]uintptr{
		"attribute": unsafe.Sizeof(attribute.KeyValue{}), "event": unsafe.Sizeof(sdktrace.Event{}), "link": unsafe.Sizeof(sdktrace.Link{}),
	} {
		assert.LessOrEqual(t, size, uintptr(ringItemBaseBytes), name)
	}
	stores := uintptr(ringSlowPerKey) * ptrBytes // at most, a trace is in a FIFO or two and a key's slots
	assert.LessOrEqual(t, unsafe.Sizeof(ringTrace{})+ringFreeSpansCap*ifaceBytes+mapEntryBytes+stores, uintptr(ringSlotBytes))
	assert.LessOrEqual(t, unsafe.Sizeof(keyStore{})+ringKeyMaxLen+mapEntryBytes, uintptr(ringKeySlotBytes))
}

// checkRing verifies the ring's bookkeeping: every stored trace is in the
// map and knows where it is stored, its refs count its stores, the byte
// count is the sum of the traces' and within the budget, and no freed
// trace is still in use.
func checkRing(t *testing.T, r *spanRing) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	refs := map[*ringTrace]int{}
	held := func(tr *ringTrace, where string, ok bool) {
		t.Helper()
		if r.traces[tr.id] != tr || !ok {
			t.Fatalf("%s: trace %s misfiled: %+v", where, tr.id, *tr)
		}
		refs[tr]++
	}
	for i, tr := range r.pending.slots {
		if tr != nil {
			held(tr, "pending", tr.pendPos == i && !tr.done)
		}
	}
	for i, tr := range r.recent.slots {
		if tr != nil {
			held(tr, "recent", tr.recentPos == i && tr.outcome == outcomeOK)
		}
	}
	for c := range r.classes {
		for i, tr := range r.classes[c].slots {
			if tr != nil {
				held(tr, "class", tr.classPos == i && int(tr.outcome)-1 == c)
			}
		}
	}
	for k, ks := range r.keys {
		if r.keyIndex[ks.name] != k {
			t.Fatalf("key %q is not at %d", ks.name, k)
		}
		for _, tr := range ks.slow {
			if tr != nil {
				held(tr, "slow", tr.slow && tr.key == k)
			}
		}
		for c := range ks.last {
			for _, tr := range ks.last[c] {
				if tr != nil {
					held(tr, "last", tr.keyLast && tr.key == k && int(tr.outcome)-1 == c)
				}
			}
		}
	}
	var bytes int64
	for id, tr := range r.traces {
		if tr.id != id || tr.refs != refs[tr] || tr.refs <= 0 {
			t.Fatalf("trace %s: %d refs, %d stores hold it", id, tr.refs, refs[tr])
		}
		bytes += tr.bytes
	}
	if bytes != r.bytes || r.bytes > r.lim.MaxBytes {
		t.Fatalf("%d bytes counted, %d summed, budget %d", r.bytes, bytes, r.lim.MaxBytes)
	}
	for _, tr := range r.free {
		if refs[tr] != 0 || len(tr.spans) != 0 {
			t.Fatalf("a freed trace is in use: %+v", *tr)
		}
	}
}

// Under a random mix of requests (outcomes, keys, children before and
// after their root, several roots per trace, oversized spans) and a small
// budget, the ring's bookkeeping stays consistent.
func TestSpanRingBookkeeping(t *testing.T) {
	ring := newSpanRingLimits(ringLimits{Recent: 20, MaxBytes: 48 << 10})
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 5000 {
		tid := uint64(i + 1)
		if rng.IntN(20) == 0 && i > 10 {
			tid = uint64(rng.IntN(i) + 1) // another request of an earlier trace
		}
		start := t0.Add(time.Duration(i) * time.Millisecond)
		root := okCall(tid, fmt.Sprintf("tool%d", rng.IntN(20)), start, time.Duration(rng.IntN(1000))*time.Microsecond)
		root.sid = uint64(rng.Int64())
		switch rng.IntN(10) {
		case 0:
			root.status, root.attrs = codes.Error, append(root.attrs, attribute.String("error.type", "tool_error"))
		case 1:
			root.attrs = append(root.attrs, attribute.String("vigil.cancel.cause", "client_cancel"))
		case 2:
			root.events = []sdktrace.Event{{Name: "response_dropped", Time: start, Attributes: []attribute.KeyValue{attribute.String("vigil.drop.reason", "peer_gone")}}}
		case 3:
			root.attrs = append(root.attrs, attribute.String("big", strings.Repeat("b", 20_000)))
		}
		var batch []synthSpan
		for c := range rng.IntN(3) {
			batch = append(batch, synthSpan{name: "child", tid: tid, sid: root.sid + uint64(c) + 1, parent: root.sid, start: start, dur: time.Microsecond})
		}
		switch rng.IntN(3) {
		case 0: // the root in the same batch, last
			export(t, ring, append(batch, root)...)
		case 1: // children in their own batch first
			if len(batch) > 0 {
				export(t, ring, batch...)
			}
			export(t, ring, root)
		default: // the root never ends here: children only
			if len(batch) > 0 {
				export(t, ring, batch...)
			}
		}
		checkRing(t, ring)
	}
	m := ring.memory()
	assert.LessOrEqual(t, m.Bytes, m.Bound)
	for _, c := range []string{classRecent, classSlow, classError, classCancelled, classDropped} {
		assert.NotEmpty(t, ring.list(traceFilter{Class: c}), c)
	}
}
