package streamable_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/streamable"
)

// The helpers of the resumability tests (memstore_test.go, resume_test.go)
// start with "rs".

// rsAppend appends data to stream of session and returns the event's id.

// eventOverhead is the size a memoryEventStore counts for an event in
// addition to its data.
const eventOverhead = 64

func rsAppend(t testing.TB, s streamable.EventStore, session, stream, data string) string {
	t.Helper()
	var raw []byte
	if data != "" {
		raw = []byte(data)
	}
	id, err := s.Append(context.Background(), session, stream, raw)
	require.NoError(t, err)
	return id
}

// rsReplay replays after lastID and returns the stream and the events as
// "id=data" strings.
func rsReplay(t testing.TB, s streamable.EventStore, session, lastID string) (string, []string) {
	t.Helper()
	stream, events, err := s.Replay(context.Background(), session, lastID)
	require.NoError(t, err)
	out := []string{}
	for _, ev := range events {
		out = append(out, ev.ID+"="+string(ev.Data))
	}
	return stream, out
}

func TestMemoryEventStoreReplaysOneStream(t *testing.T) {
	s := streamable.NewMemoryEventStore(0, 0)
	a0 := rsAppend(t, s, "S", "1", "") // priming
	b0 := rsAppend(t, s, "S", "2", "")
	a1 := rsAppend(t, s, "S", "1", "a1")
	b1 := rsAppend(t, s, "S", "2", "b1")
	a2 := rsAppend(t, s, "S", "1", "a2")
	o1 := rsAppend(t, s, "T", "1", "other session")
	b2 := rsAppend(t, s, "S", "2", "b2")

	ids := []string{a0, b0, a1, b1, a2, o1, b2}
	assert.Equal(t, []string{"1_1", "2_2", "1_3", "2_4", "1_5", "1_6", "2_7"}, ids, "ids: <stream>_<n>, n counting every event")

	tests := []struct {
		name       string
		session    string
		last       string
		wantStream string
		want       []string
	}{
		{name: "after the priming event", session: "S", last: a0, wantStream: "1", want: []string{"1_3=a1", "1_5=a2"}},
		{name: "after a middle event", session: "S", last: a1, wantStream: "1", want: []string{"1_5=a2"}},
		{name: "after the newest event", session: "S", last: a2, wantStream: "1", want: []string{}},
		{name: "the other stream", session: "S", last: b0, wantStream: "2", want: []string{"2_4=b1", "2_7=b2"}},
		{name: "the other stream, middle", session: "S", last: b1, wantStream: "2", want: []string{"2_7=b2"}},
		{name: "another session, same key", session: "T", last: o1, wantStream: "1", want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream, got := rsReplay(t, s, tt.session, tt.last)
			assert.Equal(t, tt.wantStream, stream)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMemoryEventStoreUnknownIDs(t *testing.T) {
	s := streamable.NewMemoryEventStore(0, 0)
	rsAppend(t, s, "S", "1", "x")
	rsAppend(t, s, "S", "1", "y")
	other := rsAppend(t, s, "T", "7", "z")

	tests := []struct {
		name string
		last string
	}{
		{name: "empty", last: ""},
		{name: "no separator", last: "garbage"},
		{name: "no stream", last: "_1"},
		{name: "zero", last: "1_0"},
		{name: "not a number", last: "1_x"},
		{name: "negative", last: "1_-1"},
		{name: "unknown stream", last: "9_1"},
		{name: "never issued in the stream", last: "1_99"},
		{name: "another session's id", last: other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, events, err := s.Replay(context.Background(), "S", tt.last)
			require.ErrorIs(t, err, streamable.ErrUnknownEvent)
			assert.Empty(t, events)
		})
	}
}

func TestMemoryEventStoreStreamCap(t *testing.T) {
	const data = "0123456789"
	const size = eventOverhead + len(data)
	s := streamable.NewMemoryEventStore(0, int64(3*size))
	var ids []string
	for i := range 5 {
		ids = append(ids, rsAppend(t, s, "S", "1", data))
		if i < 3 {
			rsAppend(t, s, "S", "2", strconv.Itoa(i)) // another stream, under its cap
		}
	}

	// Stream 1 keeps its newest three events; a resumption after a dropped
	// event replays what is left.
	_, got := rsReplay(t, s, "S", ids[0])
	assert.Equal(t, []string{ids[2] + "=" + data, ids[3] + "=" + data, ids[4] + "=" + data}, got)
	_, got = rsReplay(t, s, "S", ids[3])
	assert.Equal(t, []string{ids[4] + "=" + data}, got)
	// Stream 2 lost nothing.
	_, got = rsReplay(t, s, "S", "2_2")
	assert.Equal(t, []string{"2_4=1", "2_6=2"}, got)

	events, bytes := streamable.StoreSize(s)
	assert.Equal(t, 3+3, events)
	assert.Equal(t, int64(3*size+3*(eventOverhead+1)), bytes)
}

func TestMemoryEventStoreTotalCap(t *testing.T) {
	const size = eventOverhead + 1
	s := streamable.NewMemoryEventStore(int64(3*size), 0)
	a1 := rsAppend(t, s, "A", "1", "1")
	b1 := rsAppend(t, s, "B", "1", "2")
	rsAppend(t, s, "A", "1", "3")
	rsAppend(t, s, "B", "1", "4") // drops a1, the store's oldest
	rsAppend(t, s, "A", "2", "5") // drops b1

	events, bytes := streamable.StoreSize(s)
	assert.Equal(t, 3, events)
	assert.Equal(t, int64(3*size), bytes)
	_, got := rsReplay(t, s, "A", a1)
	assert.Equal(t, []string{"1_3=3"}, got, "session A, stream 1 keeps its newest event")
	_, got = rsReplay(t, s, "B", b1)
	assert.Equal(t, []string{"1_4=4"}, got)

	rsAppend(t, s, "B", "1", "6") // drops A's 1_3: stream A/1 is now empty
	rsAppend(t, s, "B", "1", "7") // drops B's 1_4
	_, _, err := s.Replay(context.Background(), "A", a1)
	require.ErrorIs(t, err, streamable.ErrUnknownEvent, "a stream whose events were all dropped is forgotten")
	_, got = rsReplay(t, s, "A", "2_5")
	assert.Equal(t, []string{}, got)
	_, got = rsReplay(t, s, "B", b1)
	assert.Equal(t, []string{"1_6=6", "1_7=7"}, got)
}

func TestMemoryEventStoreKeepsNewestEvent(t *testing.T) {
	s := streamable.NewMemoryEventStore(1, 1)
	first := rsAppend(t, s, "S", "1", "")
	rsAppend(t, s, "S", "1", "too big for every cap")
	_, got := rsReplay(t, s, "S", first)
	assert.Equal(t, []string{"1_2=too big for every cap"}, got)
	events, _ := streamable.StoreSize(s)
	assert.Equal(t, 1, events)
}

func TestMemoryEventStoreForget(t *testing.T) {
	s := streamable.NewMemoryEventStore(0, 0)
	a := rsAppend(t, s, "A", "1", "")
	rsAppend(t, s, "A", "1", "a")
	rsAppend(t, s, "A", "2", "a2")
	b := rsAppend(t, s, "B", "1", "")
	rsAppend(t, s, "B", "1", "b")

	require.NoError(t, s.Forget(context.Background(), "A"))
	_, _, err := s.Replay(context.Background(), "A", a)
	require.ErrorIs(t, err, streamable.ErrUnknownEvent)
	_, got := rsReplay(t, s, "B", b)
	assert.Equal(t, []string{"1_5=b"}, got)
	events, bytes := streamable.StoreSize(s)
	assert.Equal(t, 2, events)
	assert.Equal(t, int64(2*eventOverhead+1), bytes)

	require.NoError(t, s.Forget(context.Background(), "B"))
	require.NoError(t, s.Forget(context.Background(), "never seen"))
	events, bytes = streamable.StoreSize(s)
	assert.Zero(t, events)
	assert.Zero(t, bytes)
}

// Many streams appended to at once, with replays and forgets of other
// sessions in between: each stream's events come back in order (run with
// -race).
func TestMemoryEventStoreConcurrent(t *testing.T) {
	s := streamable.NewMemoryEventStore(1<<30, 1<<30)
	const writers, perWriter = 8, 200
	var wg sync.WaitGroup
	firsts := make([]string, writers)
	for w := range writers {
		wg.Go(func() {
			// Not require (nor assert.NoError, which the linter would have
			// be require): this is not the test's goroutine.
			ctx := context.Background()
			check := func(err error) {
				if err != nil {
					t.Error(err)
				}
			}
			stream := strconv.Itoa(w)
			var err error
			firsts[w], err = s.Append(ctx, "S", stream, nil)
			check(err)
			for i := range perWriter {
				id, err := s.Append(ctx, "S", stream, fmt.Appendf(nil, "%d-%d", w, i))
				check(err)
				if i%50 == 0 {
					_, _, err := s.Replay(ctx, "S", id)
					check(err)
					_, err = s.Append(ctx, "junk"+stream, "1", []byte("x"))
					check(err)
					check(s.Forget(ctx, "junk"+stream))
				}
			}
		})
	}
	wg.Wait()

	seen := map[string]bool{}
	for w := range writers {
		stream, events, err := s.Replay(context.Background(), "S", firsts[w])
		require.NoError(t, err)
		assert.Equal(t, strconv.Itoa(w), stream)
		require.Len(t, events, perWriter)
		for i, ev := range events {
			assert.Equal(t, fmt.Sprintf("%d-%d", w, i), string(ev.Data))
			assert.False(t, seen[ev.ID], "duplicate id %s", ev.ID)
			seen[ev.ID] = true
		}
	}
	events, _ := streamable.StoreSize(s)
	assert.Equal(t, writers*(perWriter+1), events)
}

// A store drops its oldest events as new ones come; it stays within its cap
// however many events pass through it.
func TestMemoryEventStoreStaysBounded(t *testing.T) {
	const size = eventOverhead + 4
	s := streamable.NewMemoryEventStore(int64(10*size), int64(2*size))
	for i := range 10000 {
		rsAppend(t, s, "S"+strconv.Itoa(i%7), strconv.Itoa(i%13), fmt.Sprintf("%04d", i%10000))
		if i%1000 == 999 {
			require.NoError(t, s.Forget(context.Background(), "S3"))
		}
		events, bytes := streamable.StoreSize(s)
		require.LessOrEqual(t, bytes, int64(10*size))
		require.LessOrEqual(t, events, 10)
	}
}

// One session's events are capped over all its streams: the stream
// appended to drops its own oldest events first, then the session's oldest
// go whatever their stream, never another session's; the stream appended
// to keeps its newest event.
func TestMemoryEventStoreSessionCap(t *testing.T) {
	const size = eventOverhead + 1
	s := streamable.NewMemoryEventStore(0, 0)
	streamable.SetMaxSessionBytes(s, 4*size)
	other := rsAppend(t, s, "B", "1", "b")
	a1 := rsAppend(t, s, "A", "1", "1")
	a2 := rsAppend(t, s, "A", "2", "2")
	rsAppend(t, s, "A", "1", "3")
	for i := range 10 {
		rsAppend(t, s, "A", "3", strconv.Itoa(i)) // stream 3 drops its own oldest
	}
	_, got := rsReplay(t, s, "A", a1)
	assert.Equal(t, []string{"1_4=3"}, got, "stream 1 kept its events")
	_, got = rsReplay(t, s, "A", a2)
	assert.Equal(t, []string{}, got, "stream 2 kept its event")

	// A large event pushes the session's oldest events out: 1_2, then
	// stream 2's only one.
	rsAppend(t, s, "A", "3", strings.Repeat("x", 2*size))
	_, _, err := s.Replay(context.Background(), "A", a2)
	require.ErrorIs(t, err, streamable.ErrUnknownEvent, "stream 2 was pushed out by its session's flood")
	_, got = rsReplay(t, s, "A", a1)
	assert.Equal(t, []string{"1_4=3"}, got)
	_, got = rsReplay(t, s, "B", other)
	assert.Equal(t, []string{}, got, "another session's stream is still known")
	events, _ := streamable.StoreSize(s)
	assert.Equal(t, 1+2, events)

	// Many small streams, then one event larger than the cap: the session
	// keeps that one event.
	for i := range 200 {
		rsAppend(t, s, "C", strconv.Itoa(i+10), "")
	}
	events, _ = streamable.StoreSize(s)
	assert.Equal(t, 1+2+4, events)
	rsAppend(t, s, "C", "9", strings.Repeat("x", 4*size))
	events, _ = streamable.StoreSize(s)
	assert.Equal(t, 1+2+1, events)
}
