package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// ErrProgressNotIncreasing is returned by [ReportProgress] for a value that
// is not above the previous one: MCP requires progress to increase.
var ErrProgressNotIncreasing = errors.New("mcp: progress must increase")

// progressTable holds a session's progress tokens in flight, by token (see
// progressKeyOf), so that two requests in flight cannot share one. The zero
// value is ready.
type progressTable struct {
	mu    sync.Mutex
	inUse map[string]*progressState
}

// progressState is the progress of one request that carries a token.
type progressState struct {
	token    json.RawMessage // as the client sent it: echoed exactly
	interval time.Duration

	mu      sync.Mutex // held while a notification is written: keeps them in order
	done    bool       // the handler returned: send nothing more
	started bool       // a value was reported
	last    float64    // the last value reported, sent or not
	sent    time.Time  // when the last notification was sent
}

type progressKey struct{}

// beginRequest checks what a request's _meta may carry for every method —
// its progress token and, from 2026-07-28, its log level — and claims the
// progress token for the request. route calls it before the method's
// handler, with a context that gives ReportProgress the request's progress,
// and calls release when the handler returns: before the response is
// written, so that a client may reuse the token as soon as it has the
// answer.
func (s *Server) beginRequest(ctx context.Context, req *Request) (_ context.Context, release func(), err error) {
	release = func() {}
	if req.IsNotification() {
		return ctx, release, nil
	}
	if err := checkLogLevelMeta(req); err != nil {
		return ctx, release, err
	}
	raw, ok := req.Meta.Get(vocab.MetaProgressToken)
	raw = bytes.TrimSpace(raw)
	if !ok || bytes.Equal(raw, []byte("null")) {
		return ctx, release, nil
	}
	if len(raw) > maxProgressToken {
		return ctx, release, Errorf(protocol.CodeInvalidParams, "invalid progressToken: over %d bytes", maxProgressToken)
	}
	key, ok := progressKeyOf(raw)
	if !ok {
		return ctx, release, Errorf(protocol.CodeInvalidParams, "invalid progressToken: want a string or an integer")
	}
	st := &progressState{token: bytes.Clone(raw), interval: s.cfg.notify.progressInterval}
	t := &req.Session.progress
	t.mu.Lock()
	if _, busy := t.inUse[key]; busy {
		t.mu.Unlock()
		return ctx, release, Errorf(protocol.CodeInvalidParams, "progress token already in use by another request in flight")
	}
	if t.inUse == nil {
		t.inUse = make(map[string]*progressState)
	}
	t.inUse[key] = st
	t.mu.Unlock()
	release = func() {
		st.mu.Lock() // waits for a notification being written
		st.done = true
		st.mu.Unlock()
		t.mu.Lock()
		delete(t.inUse, key)
		t.mu.Unlock()
	}
	return context.WithValue(ctx, progressKey{}, st), release, nil
}

// progressKeyOf names a token: the string "1" and the number 1 are
// different tokens, and 1 and 1.0e0 the same.
func progressKeyOf(raw json.RawMessage) (string, bool) {
	switch {
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s" + s, true
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return "", false
		}
		if i, err := n.Int64(); err == nil {
			return "n" + strconv.FormatInt(i, 10), true
		}
		if f, err := n.Float64(); err == nil && f == math.Trunc(f) && !math.IsInf(f, 0) {
			return "n" + strconv.FormatFloat(f, 'f', -1, 64), true
		}
	}
	return "", false
}

// ReportProgress sends notifications/progress for the request that ctx (a
// handler's context) belongs to, when the client asked for progress with a
// progressToken; without one it does nothing and returns nil. total <= 0
// means the total is unknown and message "" means none; both are then left
// out.
//
// progress must be above the previous value reported for the request, else
// nothing is sent and the error wraps [ErrProgressNotIncreasing]. Updates
// less than the progress interval apart ([WithProgressInterval]) are
// dropped, unless progress reaches total; the next update must still be
// above them. Once the handler has returned or the request is over
// (answered, cancelled), ReportProgress sends nothing and returns nil.
// Otherwise the error is that of the write, which is bounded by the write
// timeout. It is safe for concurrent use; concurrent updates are sent in
// the order they were checked.
func ReportProgress(ctx context.Context, progress, total float64, message string) error {
	st, _ := ctx.Value(progressKey{}).(*progressState)
	if st == nil {
		return nil
	}
	if math.IsNaN(progress) || math.IsInf(progress, 0) || math.IsNaN(total) || math.IsInf(total, 0) {
		return fmt.Errorf("mcp: progress %v of %v: values must be finite", progress, total)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done || ctx.Err() != nil {
		return nil
	}
	if st.started && progress <= st.last {
		return fmt.Errorf("%w: %v after %v", ErrProgressNotIncreasing, progress, st.last)
	}
	st.started, st.last = true, progress
	now := time.Now()
	final := total > 0 && progress >= total
	if !final && !st.sent.IsZero() && now.Sub(st.sent) < st.interval {
		return nil
	}
	st.sent = now
	params := struct {
		ProgressToken json.RawMessage `json:"progressToken"`
		Progress      float64         `json:"progress"`
		Total         float64         `json:"total,omitempty"`
		Message       string          `json:"message,omitempty"`
	}{st.token, progress, max(total, 0), message}
	return RequestFromContext(ctx).Session.Notify(ctx, "notifications/progress", params)
}
