package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Input asked on another's behalf (2026-07-28). A handler that relays a
// request to another server, a gateway say, cannot ask the client through
// CallClient: the questions, their keys and the state between rounds are
// the other server's. It returns an [*InputRequired] with them instead;
// the core answers input_required with those questions under those keys,
// and seals the handler's state into the requestState, bound like any to
// the caller and the request, so that no other caller or request can
// replay it. The client's retry runs the handler again, which reads the
// answers and its state with [InputResponses].

// InputRequired is the error a handler of a stateless 2026-07-28
// tools/call, prompts/get or resources/read returns to answer
// input_required with questions it words itself: Requests become the
// result's inputRequests as they are, and State travels sealed in its
// requestState until [InputResponses] gives it back in the client's
// retry. In any other request it fails the request as an internal error.
type InputRequired struct {
	// Requests are the questions, by input key: each a JSON object with
	// the method and params the client is to answer ({"method":
	// "elicitation/create", "params": {...}}). At least one.
	Requests map[string]json.RawMessage
	// State is what the handler needs again in the retry; nil for none.
	State []byte
}

// Error says what the handler asked, for a request that cannot ask it.
func (e *InputRequired) Error() string {
	return fmt.Sprintf("mcp: the handler asks the client %d question(s) (input_required), which only a stateless 2026-07-28 tools/call, prompts/get or resources/read can ask", len(e.Requests))
}

// InputResponses returns what the client's retry of a stateless
// 2026-07-28 request answers, for the handler whose context ctx is: the
// inputResponses of the keys the previous round asked, and the State of
// the [*InputRequired] that asked them. A retry that carries no
// requestState gives all its inputResponses and no state; a first round,
// or a request of another era or method, gives nothing. The map is the
// handler's to keep.
func InputResponses(ctx context.Context) (responses map[string]json.RawMessage, state []byte) {
	req, _ := ctx.Value(requestKey{}).(*Request)
	if req == nil {
		return nil, nil
	}
	e, ok := req.era.(*statelessEra)
	if !ok || e.round == nil {
		return nil, nil
	}
	r := e.round
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.answers) > 0 {
		responses = maps.Clone(r.answers)
	}
	return responses, r.carried
}

// relayedInputResult builds the input_required result of a handler that
// returned ir in round r: ir's questions, and a requestState carrying
// ir.State and the keys it asked.
func (s *Server) relayedInputResult(r *mrtrRound, ir *InputRequired) (any, error) {
	if len(ir.Requests) == 0 {
		return nil, errors.New("mcp: InputRequired without requests")
	}
	for k, q := range ir.Requests {
		var probe struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(q, &probe) != nil || probe.Method == "" {
			return nil, Errorf(protocol.CodeInternal, "input request %q is not an object with a method", k)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := requestState{Pending: slices.Sorted(maps.Keys(ir.Requests)), Carried: ir.State, Expires: time.Now().Add(s.cfg.stateTTL).Unix()}
	token, err := s.sealState(st, s.callerKey(r.req), r.bound())
	if err != nil {
		return nil, err
	}
	return struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}{"input_required", ir.Requests, token}, nil
}
