package debugpage

import "unsafe"

// debugMemory is what the page's data may hold at most, in bytes.
type debugMemory struct {
	StatsBound  int64 `json:"stats_bound_bytes"`
	StatsInUse  int64 `json:"stats_in_use_bytes"`
	EventsBound int64 `json:"event_log_bound_bytes"` // recentEvents of each kind, and an entry per session live now (eventsBoundBytes)
	// RingBound is the trace ring's bound and RingInUse its current
	// estimate (spanRing.memory); 0 when spans go to an exporter.
	RingBound  int64 `json:"trace_ring_bound_bytes"`
	RingInUse  int64 `json:"trace_ring_in_use_bytes"`
	RingTraces int   `json:"trace_ring_traces"`
	Total      int64 `json:"total_bound_bytes"`
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

// memory returns the bounds of what the page's data holds, ring's too.
func (p *debugPage) memory(ring *spanRing) debugMemory {
	// The transports bound the live sessions (streamable.WithMaxSessions):
	// the event log's bound is the one of the sessions live now.
	m := debugMemory{EventsBound: eventsBoundBytes(p.rec.events.liveSessions())}
	m.StatsBound, m.StatsInUse = statsBoundBytes(), p.rec.events.stats.statsInUseBytes()
	if ring != nil {
		rm := ring.memory()
		m.RingBound, m.RingInUse, m.RingTraces = rm.Bound, rm.Bytes, rm.Traces
	}
	m.Total = m.StatsBound + m.EventsBound + m.RingBound
	return m
}
