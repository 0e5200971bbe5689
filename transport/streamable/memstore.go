package streamable

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// memoryEventOverhead is the size a [memoryEventStore] counts for an event
// in addition to its data.
const memoryEventOverhead = 64

// Default bounds of a [memoryEventStore].
const (
	defaultMaxStreamBytes  = 1 << 20
	defaultMaxSessionBytes = 4 << 20
	defaultMaxBytes        = 64 << 20
)

// memoryEventStore is the [EventStore] in memory that
// [NewMemoryEventStore] returns, bounded by the sizes given to it. Event ids have the form "<stream>_<n>", n
// counting every event the store appended, from 1, so that an id is never
// issued twice. A stream whose events were all dropped is forgotten, and
// ids of it become unknown. It is safe for concurrent use; the zero value
// is not usable.
type memoryEventStore struct {
	maxStream  int64
	maxTotal   int64
	maxSession int64

	mu       sync.Mutex
	sessions map[string]map[string]*memStream
	bySess   map[string]*memSession // what each session's events add up to
	order    []memRef               // every kept event (and some dropped ones), oldest first
	live     int                    // events kept
	total    int64                  // their size
	seq      uint64                 // last sequence number issued
}

var _ EventStore = (*memoryEventStore)(nil)

// memStream is the events kept for one stream, oldest first.
type memStream struct {
	session, key string
	events       []memEvent
	last         uint64 // sequence number of its newest event
	size         int64
	gone         bool // dropped from the store: its refs in order are stale
}

type memEvent struct {
	seq  uint64
	data []byte
	size int64
}

// memSession is the size of a session's events, and their order, oldest
// first (with stale refs, as the store's).
type memSession struct {
	size  int64
	live  int
	order []memRef
}

// memRef names one event in the store-wide order. It is stale once the
// event was dropped by its stream's cap or with its session.
type memRef struct {
	st  *memStream
	seq uint64
}

// NewMemoryEventStore returns an empty store bounded by two sizes. The size
// of an event is the length of its data plus a fixed overhead of
// 64 bytes, so that priming events count too.
//   - maxBytes caps the size of all the events kept (64 MiB when
//     <= 0); beyond it the oldest events of the store are dropped, whatever
//     their session. The newest event is always kept.
//   - maxStreamBytes caps the size of the events kept for one stream
//     (1 MiB when <= 0); beyond it the stream's oldest
//     events are dropped. A stream always keeps its newest event.
//
// The events of one session, over all its streams, are capped too
// (4 MiB),
// so that one session's flood drops its own events before the others'.
func NewMemoryEventStore(maxBytes, maxStreamBytes int64) EventStore {
	s := &memoryEventStore{
		maxStream:  maxStreamBytes,
		maxTotal:   maxBytes,
		maxSession: defaultMaxSessionBytes,
		sessions:   make(map[string]map[string]*memStream),
		bySess:     make(map[string]*memSession),
	}
	if s.maxStream <= 0 {
		s.maxStream = defaultMaxStreamBytes
	}
	if s.maxTotal <= 0 {
		s.maxTotal = defaultMaxBytes
	}
	return s
}

// setMaxSessionBytes caps the size of the events kept for one session,
// over all its streams, to n (4 MiB when n <= 0):
// beyond it the oldest events of the stream appended to are dropped, then
// the session's oldest ones whatever their stream. It applies to the
// events appended from then on.
func (s *memoryEventStore) setMaxSessionBytes(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n <= 0 {
		n = defaultMaxSessionBytes
	}
	s.maxSession = n
}

// Append implements [EventStore].
func (s *memoryEventStore) Append(_ context.Context, session, stream string, data []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	streams := s.sessions[session]
	if streams == nil {
		streams = make(map[string]*memStream)
		s.sessions[session] = streams
	}
	st := streams[stream]
	if st == nil {
		st = &memStream{session: session, key: stream}
		streams[stream] = st
	}
	s.seq++
	st.last = s.seq
	ev := memEvent{seq: s.seq, data: data, size: int64(len(data)) + memoryEventOverhead}
	st.events = append(st.events, ev)
	st.size += ev.size
	s.total += ev.size
	ms := s.bySess[session]
	if ms == nil {
		ms = new(memSession)
		s.bySess[session] = ms
	}
	ms.size += ev.size
	ms.live++
	ms.order = append(ms.order, memRef{st: st, seq: ev.seq})
	s.live++
	s.order = append(s.order, memRef{st: st, seq: ev.seq})
	for st.size > s.maxStream && len(st.events) > 1 {
		s.dropOldest(st)
	}
	s.trimSession(ms, st)
	s.trim()
	return memEventID(stream, ev.seq), nil
}

// trim drops the store's oldest events until it fits its cap, and compacts
// the order when stale refs make up most of it; s.mu is held.
func (s *memoryEventStore) trim() {
	for s.total > s.maxTotal && s.live > 1 {
		ref := s.order[0]
		s.order[0] = memRef{}
		s.order = s.order[1:]
		if ref.st.gone || len(ref.st.events) == 0 || ref.seq < ref.st.events[0].seq {
			continue // stale
		}
		s.dropOldest(ref.st)
	}
	if stale := len(s.order) - s.live; stale > 64 && stale > s.live {
		kept := make([]memRef, 0, s.live)
		for _, ref := range s.order {
			if !ref.st.gone && len(ref.st.events) > 0 && ref.seq >= ref.st.events[0].seq {
				kept = append(kept, ref)
			}
		}
		s.order = kept
	}
}

// stale reports whether the event ref names was dropped.
func (ref memRef) stale() bool {
	return ref.st.gone || len(ref.st.events) == 0 || ref.seq < ref.st.events[0].seq
}

// trimSession drops events of the session ms until it fits its cap: the
// oldest of st, the stream appended to, first (it keeps its newest), then
// the session's oldest; and compacts the session's order when stale refs
// make up most of it; s.mu is held.
func (s *memoryEventStore) trimSession(ms *memSession, st *memStream) {
	for ms.size > s.maxSession && len(st.events) > 1 {
		s.dropOldest(st)
	}
	for ms.size > s.maxSession && len(ms.order) > 0 {
		ref := ms.order[0]
		if !ref.stale() && ref.st == st {
			break // st's newest event, the session's last one
		}
		ms.order[0] = memRef{}
		ms.order = ms.order[1:]
		if !ref.stale() {
			s.dropOldest(ref.st)
		}
	}
	if stale := len(ms.order) - ms.live; stale > 64 && stale > ms.live {
		kept := make([]memRef, 0, ms.live)
		for _, ref := range ms.order {
			if !ref.stale() {
				kept = append(kept, ref)
			}
		}
		ms.order = kept
	}
}

// dropOldest drops the oldest event of st, and st itself once empty; s.mu
// is held.
func (s *memoryEventStore) dropOldest(st *memStream) {
	ev := st.events[0]
	st.events[0] = memEvent{}
	st.events = st.events[1:]
	st.size -= ev.size
	s.total -= ev.size
	if ms := s.bySess[st.session]; ms != nil {
		ms.size -= ev.size
		if ms.live--; ms.live == 0 {
			delete(s.bySess, st.session)
		}
	}
	s.live--
	if len(st.events) == 0 {
		st.gone = true
		streams := s.sessions[st.session]
		delete(streams, st.key)
		if len(streams) == 0 {
			delete(s.sessions, st.session)
		}
	}
}

// Replay implements [EventStore].
func (s *memoryEventStore) Replay(_ context.Context, session, lastID string) (string, []Event, error) {
	key, seq, ok := parseMemEventID(lastID)
	if !ok {
		return "", nil, fmt.Errorf("streamable: event id %q: %w", lastID, ErrUnknownEvent)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sessions[session][key]
	if st == nil || seq > st.last {
		return "", nil, fmt.Errorf("streamable: event id %q: %w", lastID, ErrUnknownEvent)
	}
	var events []Event
	for _, ev := range st.events {
		if ev.seq > seq {
			events = append(events, Event{ID: memEventID(key, ev.seq), Data: ev.data})
		}
	}
	return key, events, nil
}

// Forget implements [EventStore].
func (s *memoryEventStore) Forget(_ context.Context, session string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.sessions[session] {
		st.gone = true
		s.total -= st.size
		s.live -= len(st.events)
	}
	delete(s.sessions, session)
	delete(s.bySess, session)
	s.trim()
	return nil
}

// size returns the number of events kept and their total size.
func (s *memoryEventStore) size() (events int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live, s.total
}

func memEventID(stream string, seq uint64) string {
	return stream + "_" + strconv.FormatUint(seq, 10)
}

func parseMemEventID(id string) (stream string, seq uint64, ok bool) {
	i := strings.LastIndexByte(id, '_')
	if i <= 0 {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(id[i+1:], 10, 64)
	if err != nil || seq == 0 {
		return "", 0, false
	}
	return id[:i], seq, true
}
