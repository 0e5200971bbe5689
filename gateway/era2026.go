package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// A 2026-07-28 caller in front of a 2026-07-28 upstream: the gateway
// relays a request's rounds rather than translating them (rounds.go does
// that for a 2025 upstream). The caller's client capabilities go upstream;
// input_required comes back under the upstream's keys, the upstream's
// requestState sealed in the gateway's (server.InputRequired); a tool the
// upstream makes a task is a task of the gateway's that follows it.
// Whether the upstream speaks 2026-07-28 is learnt from server/discover
// the first time such a caller comes, on a session of its own (m.era; a
// process of its own for stdio, listened to for list changes); an
// upstream that does not is remembered, and its callers are translated.
// docs/gateway.md, "Eras and tasks", has the whole story.

// errNoEra is the start of a 2026-07-28 session with an upstream that
// does not speak that version.
var errNoEra = errors.New("the upstream does not speak " + protocol.Version20260728)

// eraSession returns the 2026-07-28 session of the upstream, or nil when
// the upstream turned out not to speak that version (then remembered).
func (m *mount) eraSession(ctx context.Context) (*upstream.Session, error) {
	s, err := m.era.session(ctx)
	if errors.Is(err, errNoEra) {
		if !m.noEra.Swap(true) {
			m.log.Info("gateway: the upstream speaks only the 2025 era: 2026-07-28 callers' rounds are translated", "upstream", m.up.Name, "error", err)
		}
		return nil, nil
	}
	return s, err
}

// relayRound sends one round of a 2026-07-28 caller's request upstream,
// with the caller's capabilities and the answers of its retry, and
// returns the upstream's result: complete (without the era's members), a
// task (resultType kept, for callTool), or, for input_required, the
// *server.InputRequired that asks the caller. relays said yes first.
func (m *mount) relayRound(ctx context.Context, method string, params json.RawMessage, notes *upstream.Notes) (json.RawMessage, error) {
	s, err := m.eraSession(ctx)
	if s == nil {
		if err == nil {
			err = upstreamGone(m.up.Name, errNoEra)
		}
		return nil, m.callError(ctx, err)
	}
	if responses, state := server.InputResponses(ctx); len(responses) > 0 || len(state) > 0 {
		top := map[string]json.RawMessage{} // a retry: the answers and the upstream's state
		if len(responses) > 0 {
			if top["inputResponses"], err = json.Marshal(responses); err != nil {
				return nil, err
			}
		}
		if len(state) > 0 {
			top["requestState"] = state
		}
		params = withMembers(params, top)
	}
	raw, err := s.Round(ctx, method, params, callerMeta(ctx), notes)
	if err != nil {
		return nil, m.callError(ctx, err)
	}
	var resultType []byte // the usual result is complete: found without decoding it
	if !jsonscan.Valid(raw) || !jsonscan.EachMember(raw, func(k, v []byte) {
		if string(k) == "resultType" {
			resultType = v
		}
	}) {
		return nil, badResult(errors.New("not a JSON object"))
	}
	switch string(resultType) {
	case `"task"`:
		return raw, nil
	case `"input_required"`:
		var r struct {
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  json.RawMessage            `json:"requestState"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, badResult(err)
		}
		if len(r.InputRequests) == 0 || len(r.InputRequests) > maxTaskQuestions {
			return nil, server.NewError(protocol.CodeInternal, fmt.Errorf("upstream %s answered input_required with %d inputRequests (1 to %d)", m.up.Name, len(r.InputRequests), maxTaskQuestions))
		}
		return nil, &server.InputRequired{Requests: r.InputRequests, State: r.RequestState}
	}
	return upstream.WithoutEraMembers(raw), nil
}

// callerMeta is what of the caller's _meta goes upstream in place of the
// gateway's own: its client capabilities, so that the upstream asks only
// what the caller can answer and makes tasks only for a caller that takes
// them, and the log level it asked for.
func callerMeta(ctx context.Context) map[string]json.RawMessage {
	req := server.RequestFromContext(ctx)
	if req == nil {
		return nil
	}
	meta := map[string]json.RawMessage{}
	for _, k := range [...]string{vocab.MetaClientCapabilities, vocab.MetaLogLevel} {
		if v, ok := req.Meta.Get(k); ok {
			meta[k] = v
		}
	}
	return meta
}

// withMembers returns the JSON object params with the members of top set.
func withMembers(params json.RawMessage, top map[string]json.RawMessage) json.RawMessage {
	fields := map[string]json.RawMessage{}
	_ = json.Unmarshal(params, &fields) // the gateway encoded params
	for k, v := range top {
		fields[k] = v
	}
	out, _ := json.Marshal(fields) // raw members: encodes
	return out
}

// upstreamTask returns the id of the task an upstream's result created,
// or "".
func upstreamTask(raw json.RawMessage) string {
	if !bytes.Contains(raw, []byte(`"resultType"`)) {
		return "" // every other result has lost it (relayRound), or never had it
	}
	var t struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	if json.Unmarshal(raw, &t) != nil || t.ResultType != "task" {
		return ""
	}
	return t.TaskID
}

// The bounds of following an upstream's task: how often tasks/get asks,
// whatever the upstream suggests.
const (
	minTaskPoll = 50 * time.Millisecond
	maxTaskPoll = 5 * time.Second
)

// maxTaskQuestions bounds the questions one upstream task, or one
// input_required round, may ask.
const maxTaskQuestions = 16

// followTask is the work of the gateway's task for the upstream's task
// id: it asks tasks/get, with the caller's _meta (meta), until the
// upstream's task ends, and returns its result. Each question the
// upstream's task asks is asked in the gateway's task (CallClient, which
// lists it in the gateway's tasks/get until the caller's tasks/update
// answers it), all at once, and each answer goes upstream with
// tasks/update as it comes. When ctx ends (the caller cancelled, the task
// expired, the gateway closes), the upstream's task is cancelled.
func (m *mount) followTask(ctx context.Context, id string, meta map[string]json.RawMessage) (*server.CallToolResult, error) {
	ref := json.RawMessage(fmt.Sprintf(`{"taskId":%q}`, id))
	askCtx, stopAsking := context.WithCancel(ctx)
	var asking sync.WaitGroup
	defer func() {
		stopAsking()
		asking.Wait()
		if ctx.Err() == nil {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTaskWithin)
		defer cancel()
		if s, _ := m.eraSession(cctx); s != nil {
			_, _ = s.Round(cctx, "tasks/cancel", ref, meta, nil)
		}
	}()
	asked := map[string]bool{}
	failed := make(chan error, 1)
	for {
		s, err := m.eraSession(ctx)
		if s == nil {
			if err == nil {
				err = upstreamGone(m.up.Name, errNoEra)
			}
			return nil, m.callError(ctx, err)
		}
		raw, err := s.Round(ctx, "tasks/get", ref, meta, nil)
		if err != nil {
			return nil, m.callError(ctx, err)
		}
		var t struct {
			Status         string                     `json:"status"`
			StatusMessage  string                     `json:"statusMessage"`
			PollIntervalMs int64                      `json:"pollIntervalMs"`
			Result         json.RawMessage            `json:"result"`
			Error          *transport.Error           `json:"error"`
			InputRequests  map[string]json.RawMessage `json:"inputRequests"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, badResult(err)
		}
		switch t.Status {
		case "completed":
			res, err := decodeToolResult(upstream.WithoutEraMembers(t.Result))
			if err == nil {
				delete(res.Meta, vocab.MetaRelatedTask) // the upstream's task, not the caller's
			}
			return res, err
		case "failed":
			if t.Error != nil {
				return nil, &server.Error{Code: protocol.Code(t.Error.Code), Message: t.Error.Message, Data: t.Error.Data}
			}
			return nil, server.NewError(protocol.CodeInternal, fmt.Errorf("upstream %s: task failed: %s", m.up.Name, t.StatusMessage))
		case "cancelled":
			return nil, server.NewError(protocol.CodeInternal, fmt.Errorf("upstream %s cancelled the task", m.up.Name))
		case "input_required":
			for key, q := range t.InputRequests {
				if asked[key] {
					continue
				}
				if len(asked) == maxTaskQuestions {
					return nil, server.NewError(protocol.CodeInternal, fmt.Errorf("upstream %s: the task asked more than %d questions", m.up.Name, maxTaskQuestions))
				}
				var in struct {
					Method string          `json:"method"`
					Params json.RawMessage `json:"params"`
				}
				if err := json.Unmarshal(q, &in); err != nil || !strings.Contains(in.Method, "/") {
					return nil, server.NewError(protocol.CodeInternal, fmt.Errorf("upstream %s: task input request %q is malformed", m.up.Name, key))
				}
				asked[key] = true
				asking.Go(func() {
					if err := m.answerTask(askCtx, s, id, key, in.Method, in.Params, meta); err != nil && askCtx.Err() == nil {
						select {
						case failed <- err:
						default:
						}
					}
				})
			}
		}
		wait := time.NewTimer(min(max(time.Duration(t.PollIntervalMs)*time.Millisecond, minTaskPoll), maxTaskPoll))
		select {
		case <-wait.C:
		case err := <-failed:
			wait.Stop()
			return nil, err
		case <-ctx.Done():
			wait.Stop()
			return nil, context.Cause(ctx)
		}
	}
}

// answerTask asks the caller, in the gateway's task, the question key of
// the upstream's task, and sends the answer upstream with tasks/update.
func (m *mount) answerTask(ctx context.Context, s *upstream.Session, taskID, key, method string, params json.RawMessage, meta map[string]json.RawMessage) error {
	var answer json.RawMessage
	if err := server.CallClient(server.ContextWithInputKey(ctx, key), method, params, &answer); err != nil {
		return err
	}
	update, err := json.Marshal(struct {
		TaskID         string                     `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}{taskID, map[string]json.RawMessage{key: answer}})
	if err != nil {
		return err
	}
	if _, err := s.Round(ctx, "tasks/update", update, meta, nil); err != nil {
		return m.callError(ctx, err)
	}
	return nil
}

// notSpoken reports whether err, a 2026-07-28 session's failed start, says
// the upstream does not speak that version, rather than that it is down:
// it answered, with an error or with other versions.
func notSpoken(err error) bool {
	var rpc *transport.Error
	if errors.As(err, &rpc) {
		return true
	}
	down := errors.Is(err, upstream.ErrGone) || errors.Is(err, upstream.ErrClosed) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	return !down
}

// listenEra keeps a subscriptions/listen open on the 2026-07-28 session s
// of a stdio upstream until the session ends: its list_changed
// notifications reach the session's OnNotification, which lists again
// from it. An upstream that refuses it is only not heard.
func (m *mount) listenEra(s *upstream.Session) {
	_, err := s.Call(context.Background(), "subscriptions/listen",
		json.RawMessage(`{"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}}`),
		&upstream.Notes{Aside: true}) // the calls' log messages are theirs
	if err != nil && !errors.Is(err, upstream.ErrClosed) && !errors.Is(err, upstream.ErrGone) {
		m.log.Debug("gateway: the upstream's 2026-07-28 list changes are not heard", "upstream", m.up.Name, "error", err)
	}
}
