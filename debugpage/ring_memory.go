package debugpage

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
