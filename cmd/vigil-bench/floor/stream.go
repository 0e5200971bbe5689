package main

import (
	"io"
	"net/http"
	"sync"
)

// triggerTool is the tool whose call sends list_changed to every open GET
// stream, as cmd/vigil-everything's diagnostic tool of that name does.
const triggerTool = "test_trigger_tool_change"

// listChanged is the event every GET stream gets for each call of
// triggerTool, encoded once, as vigil writes it.
const listChanged = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"

// floor is the floor's handler: the plain net/http way of serving the
// benchmarks' requests, with nothing but what that takes.
type floor struct {
	changed broadcaster
	relay   *relay // with -relay: tools/call goes to it
}

func newFloor() *floor { return &floor{changed: broadcaster{next: make(chan struct{})}} }

// stream holds a GET open as an SSE stream and writes listChanged to it
// once per broadcast, until the client goes away.
func (f *floor) stream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	wake, seen := f.changed.wait() // before the headers: a client that has them gets every later broadcast
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-wake:
		}
		var count uint64
		wake, count = f.changed.wait()
		for ; seen < count; seen++ {
			if _, err := io.WriteString(w, listChanged); err != nil {
				return
			}
		}
		flusher.Flush()
	}
}

// broadcaster wakes every waiter at each broadcast: a channel closed per
// broadcast, and a count of the broadcasts so that a waiter woken late
// writes each one it missed.
type broadcaster struct {
	mu    sync.Mutex
	next  chan struct{} // closed at the next broadcast
	count uint64        // broadcasts so far
}

// wait returns the channel the next broadcast closes and the number of
// broadcasts so far.
func (b *broadcaster) wait() (<-chan struct{}, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next, b.count
}

// broadcast wakes every waiter.
func (b *broadcaster) broadcast() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.next)
	b.next = make(chan struct{})
	b.count++
}
