package debugpage

import (
	"slices"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/server"
)

// Bounds of the trace ring's tail-based retention (the package doc says
// how it works): its stores, its keys, and the estimates of its memory.
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
	rs := r.server.Load()
	if rs == nil {
		return true
	}
	srv := rs.srv
	method, target, _ := strings.Cut(name, " ")
	switch {
	case !rs.hasMethod(method):
		return false
	case target == "":
		return true
	case method == "tools/call":
		_, ok := srv.Tool(target)
		return ok
	case method == "prompts/get":
		return srv.HasPrompt(target)
	}
	return false
}

// ringServer is the server whose names may be keys of a ring: its tools
// and prompts, and the methods hasMethod knows (what the server lent the
// Recorder's observer).
type ringServer struct {
	srv       *server.Server
	hasMethod func(method string) bool
}

// keyByServer makes the methods hasMethod knows and srv's tools and
// prompts the only keys of r besides ringOtherKey (see knows).
func (r *spanRing) keyByServer(srv *server.Server, hasMethod func(string) bool) {
	r.server.Store(&ringServer{srv: srv, hasMethod: hasMethod})
}

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
