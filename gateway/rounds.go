package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// A stateless 2026-07-28 caller in front of a 2025 upstream. The upstream
// asks the client something (sampling, elicitation, roots) with a request
// during the call and waits; a stateless client can only be asked with an
// input_required result, and answers by calling again with its answer.
// So the gateway keeps the upstream call waiting across the client's
// retry: the question becomes an input request whose key names the
// waiting call (gateway-ID-N), the call is parked for waitFor, and the
// retry that brings the key's answer resumes it: the answer goes upstream
// and the handler waits for the result or the next question. A retry
// whose call is gone (expired, answered, or parked on another replica)
// fails with -32602 and says so. The upstream's progress and log messages
// reach the caller of the first round only.

// waitFor bounds how long a call waits for its client's retry.
const waitFor = 2 * time.Minute

// waitingKeyPrefix starts the input keys of the gateway's questions.
const waitingKeyPrefix = "gateway-"

// waitingCalls are the calls of one upstream parked until their client's
// retry, by id.
type waitingCalls struct {
	mu     sync.Mutex
	parked map[string]*waitingCall
}

// waitingCall is one upstream call of a stateless caller.
type waitingCall struct {
	id     string
	cancel context.CancelFunc // ends the upstream call
	asks   chan *question     // the upstream's questions, one at a time
	done   chan struct{}      // closed once res and err are set
	res    json.RawMessage
	err    error

	// Owned by the handler driving the call (one at a time: the parked
	// map hands it over).
	n       int       // questions so far
	pending *question // asked of the client, not answered yet
	expiry  *time.Timer
}

// question is an upstream request waiting for the client's answer.
type question struct {
	key    string
	method string
	params json.RawMessage
	answer chan answer // 1-buffered
}

type answer struct {
	result json.RawMessage
	err    error
}

type waitingKey struct{}

// waitingFrom returns the waiting call whose upstream call ctx belongs to,
// or nil.
func waitingFrom(ctx context.Context) *waitingCall {
	w, _ := ctx.Value(waitingKey{}).(*waitingCall)
	return w
}

// ask hands the upstream's request to the handler driving the call and
// waits for the client's answer (askClient, for a waiting call).
func (w *waitingCall) ask(ctx context.Context, req *transport.Request) (json.RawMessage, error) {
	q := &question{method: req.Method, params: req.Params, answer: make(chan answer, 1)}
	select {
	case w.asks <- q:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	select {
	case a := <-q.answer:
		return a.result, a.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// roundMethods are the methods a stateless request may answer
// input_required to.
var roundMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// callAcrossRounds forwards a stateless caller's request method (params
// raw) on session s, or resumes the call its retry answers, and drives
// it.
func (m *mount) callAcrossRounds(ctx context.Context, s *upstream.Session, method string, raw json.RawMessage, notes *upstream.Notes) (json.RawMessage, error) {
	req := server.RequestFromContext(ctx)
	w, retried := m.waiting.resume(req.Params)
	if w == nil && retried {
		return nil, server.NewError(protocol.CodeInvalidParams, fmt.Errorf(
			"the call of upstream %s that this retry answers is gone (answered already, waited over %v, or waiting on another replica): call the tool again",
			m.up.Name, waitFor))
	}
	if w == nil {
		w = m.startWaiting(s, method, raw, notes)
	}
	return m.drive(ctx, w)
}

// startWaiting starts the upstream call, detached from the first round's
// request: it lives until its result, its cancel, or Close. Its progress
// and log messages (notes) reach the first round's caller while it waits;
// later ones are dropped.
func (m *mount) startWaiting(s *upstream.Session, method string, raw json.RawMessage, notes *upstream.Notes) *waitingCall {
	w := &waitingCall{id: rand.Text(), asks: make(chan *question), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), waitingKey{}, w))
	w.cancel = cancel
	go func() {
		defer close(w.done)
		w.res, w.err = s.Call(ctx, method, raw, notes)
	}()
	return w
}

// drive asks the client the call's pending question, if any, then waits
// for the call's result or its next question. A question the client must
// answer in its retry parks the call and returns the error that becomes
// the input_required result.
func (m *mount) drive(ctx context.Context, w *waitingCall) (json.RawMessage, error) {
	for {
		if q := w.pending; q != nil {
			var res json.RawMessage
			err := server.CallClient(server.ContextWithInputKey(ctx, q.key), q.method, json.RawMessage(q.params), &res)
			var se *server.Error
			switch {
			case err == nil:
			case ctx.Err() != nil:
				w.cancel()
				return nil, context.Cause(ctx)
			case errors.As(err, &se) && se.Code == protocol.CodeMissingRequiredClientCapability:
				w.cancel()
				return nil, se // as the server words it, with the capability it needs in its data
			case !errors.As(err, &se) && !errors.Is(err, server.ErrCapability):
				m.waiting.park(w)
				return nil, err // input_required: the client's retry resumes the call
			}
			w.pending = nil
			q.answer <- answer{res, clientError(q.method, err)}
		}
		select {
		case <-w.done:
			if w.err != nil {
				return nil, m.callError(ctx, w.err)
			}
			return w.res, nil
		case q := <-w.asks:
			w.n++
			q.key = fmt.Sprintf("%s%s-%d", waitingKeyPrefix, w.id, w.n)
			w.pending = q
		case <-ctx.Done():
			w.cancel()
			return nil, context.Cause(ctx)
		}
	}
}

// park keeps w until its client's retry resumes it, or ends it after
// waitFor.
func (wc *waitingCalls) park(w *waitingCall) {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	if wc.parked == nil {
		wc.parked = map[string]*waitingCall{}
	}
	wc.parked[w.id] = w
	w.expiry = time.AfterFunc(waitFor, func() {
		wc.mu.Lock()
		defer wc.mu.Unlock()
		if wc.parked[w.id] == w {
			delete(wc.parked, w.id)
			w.cancel()
		}
	})
}

// resume takes the parked call whose pending question a retry's params
// answer (inputResponses holds its key); retried reports whether the
// params answer a question of the gateway's at all.
func (wc *waitingCalls) resume(params json.RawMessage) (w *waitingCall, retried bool) {
	var p struct {
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil, false
	}
	wc.mu.Lock()
	defer wc.mu.Unlock()
	for key := range p.InputResponses {
		rest, ok := strings.CutPrefix(key, waitingKeyPrefix)
		if !ok {
			continue
		}
		retried = true
		id, _, _ := strings.Cut(rest, "-")
		if w = wc.parked[id]; w != nil && w.pending != nil && w.pending.key == key {
			delete(wc.parked, id)
			w.expiry.Stop()
			return w, true
		}
	}
	return nil, retried
}

// closeAll ends the parked calls (Close).
func (wc *waitingCalls) closeAll() {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	for id, w := range wc.parked {
		w.expiry.Stop()
		w.cancel()
		delete(wc.parked, id)
	}
}

// Eras across the hop. Upstream sessions speak the 2025 session era; a
// 2026-07-28 downstream request is stateless and cannot be sent requests.
// During its tools/call, prompts/get or resources/read, an upstream's
// sampling, elicitation or roots request becomes an input_required round
// trip (rounds.go). During any other request (completion/complete, say)
// it cannot: the request is refused upstream, and the downstream call
// fails with an error that says why, whatever the upstream made of the
// refusal.

// untranslated is what a 2026-07-28 caller's forwarded call records when
// the upstream asked something the caller could not be asked: the error
// the call ends with.
type untranslated struct {
	upstream string // the upstream's name
	err      atomic.Pointer[server.Error]
}

type untranslatedKey struct{}

// capabilityOf names the client capability each upstream request needs.
var capabilityOf = map[string]string{"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}

// watchUntranslated returns ctx with an untranslated record when its
// caller is a stateless 2026-07-28 request, for refuseStateless to fill;
// ctx and nil otherwise (no cost for a 2025 session's call).
func watchUntranslated(ctx context.Context, upstreamName string) (context.Context, *untranslated) {
	req := server.RequestFromContext(ctx)
	if req == nil || req.InSession() || server.TaskIDFromContext(ctx) != "" {
		return ctx, nil // in a session, or in a task, where asking the client waits for its answer
	}
	u := &untranslated{upstream: upstreamName}
	return context.WithValue(ctx, untranslatedKey{}, u), u
}

// refuseStateless refuses an upstream's request (method) that belongs to a
// call of a stateless caller, recording the error the call is to end
// with: the caller's missing capability (-32021) when it did not declare
// the one method needs, else that the gateway cannot ask it yet. It
// returns nil for a caller in a session.
func refuseStateless(ctx context.Context, method string) *transport.Error {
	u, ok := ctx.Value(untranslatedKey{}).(*untranslated)
	if !ok {
		return nil
	}
	if capabilityOf[method] == "" {
		return nil
	}
	var declared bool
	if req := server.RequestFromContext(ctx); req != nil {
		caps := req.ClientCapabilities
		switch method {
		case "sampling/createMessage":
			declared = caps.Sampling != nil
		case "elicitation/create":
			declared = caps.Elicitation != nil
		case "roots/list":
			declared = caps.Roots != nil
		}
	}
	e := &server.Error{
		Code:    protocol.CodeMissingRequiredClientCapability,
		Message: fmt.Sprintf("upstream %s asked the client %s, a capability it did not declare", u.upstream, method),
		Data:    json.RawMessage(`{"requiredCapabilities":{"` + capabilityOf[method] + `":{}}}`),
	}
	if declared {
		e = server.NewError(protocol.CodeInvalidRequest, fmt.Errorf(
			"upstream %s asked the client %s during the call, which a stateless 2026-07-28 request cannot be asked through the gateway yet: call it in a 2025 session (initialize)",
			u.upstream, method))
	}
	u.err.CompareAndSwap(nil, e)
	return &transport.Error{Code: int64(e.Code), Message: e.Message}
}

// failure returns the error a call ends with when the upstream asked what the
// caller could not be asked; nil when it asked nothing (or u is nil).
func (u *untranslated) failure() error {
	if u == nil {
		return nil
	}
	if e := u.err.Load(); e != nil {
		return e
	}
	return nil
}
