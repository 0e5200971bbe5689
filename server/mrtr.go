package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Multi round-trip requests (2026-07-28). A stateless request cannot wait
// for the client: a handler that needs input (an elicitation, a sampling
// call, the roots) stops, and the client gets an input-required result
// listing what to ask, plus a sealed requestState. The client answers and
// retries the request with inputResponses and the requestState; the handler
// runs again from the start, and this time its calls return the answers.
// The same handler code therefore works in a 2025 session (where the calls
// are server-to-client requests) and in a 2026 stateless request.

// mrtrMethods may answer input_required.
var mrtrMethods = map[string]bool{"tools/call": true, "resources/read": true, "prompts/get": true}

// mrtrRound is one run of a stateless request's handler.
type mrtrRound struct {
	mu      sync.Mutex
	answers map[string]json.RawMessage // verified answers, by input key
	asked   map[string]inputRequest    // asked during this run, unanswered
	calls   map[string]int             // calls so far, by method, for keys; made on first use
	binding string                     // what the request state is bound to; "" until needed (see bound)
	carried []byte                     // the State of the InputRequired that the previous round returned
	req     *Request                   // the request of this run, whose caller the state is bound to

	// What binding is made of, when it was not needed at admission.
	method, name, uri string
	params            json.RawMessage
}

// bound returns what the request state is bound to, working it out the
// first time when admission did not need it. r.mu is held.
func (r *mrtrRound) bound() string {
	if r.binding == "" {
		var p struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(r.params, &p) // it unmarshalled at admission
		r.binding = binding(r.method, r.name, r.uri, p.Arguments)
	}
	return r.binding
}

// inputRequest is one entry of inputRequests: its params always present,
// {} when the call had none (see newInputRequest).
type inputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params"`
}

// newInputRequest is the input request of a call to the client of method
// with params: params {} when nil, since a client decodes an input
// request's params whatever its method (go-sdk v1.8.0 fails on one without
// them, "unexpected end of JSON input").
func newInputRequest(method string, params any) inputRequest {
	if params == nil {
		params = struct{}{}
	}
	return inputRequest{Method: method, Params: params}
}

// inputRequired interrupts a handler that needs input from the client.
// Handlers pass it on like any error; the core turns it into the result.
type inputRequired struct{ method string }

func (e *inputRequired) Error() string {
	return "mcp: " + e.method + ": the client's answer is needed (input_required)"
}

func (e *inputRequired) Unwrap() error { return errInterrupt }

// requestState is what a sealed requestState carries. What it is bound
// to (the caller's key and the request's binding) is authenticated with it
// but not stored in it: see stateAD.
type requestState struct {
	Answers map[string]json.RawMessage `json:"a,omitempty"`
	Pending []string                   `json:"p"`
	Carried []byte                     `json:"c,omitempty"` // an InputRequired's State
	Expires int64                      `json:"e"`
}

// readRound prepares the round state of a stateless request that may ask
// for input (nil for one that may not), verifying the requestState and
// taking the answers it expects from inputResponses. A requestState that
// fails verification is refused. A first round is made in first.
func (s *Server) readRound(ctx context.Context, req *Request, first *mrtrRound) (*mrtrRound, *Error) {
	if !mrtrMethods[req.Method] {
		return nil, nil
	}
	plain := !req.round // read with the request's params
	if !req.parsed {
		plain = plainRound(req.Params)
	}
	if plain {
		// Neither answers nor state: a first round, the common case. The
		// binding waits until a question needs it.
		*first = mrtrRound{method: req.Method, name: req.Name, uri: req.URI, params: req.Params, req: req}
		return first, nil
	}
	var p struct {
		Arguments      json.RawMessage            `json:"arguments"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		RequestState   *string                    `json:"requestState"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, nil // the method's own handler reports malformed params
	}
	round := &mrtrRound{answers: map[string]json.RawMessage{}, binding: binding(req.Method, req.Name, req.URI, p.Arguments), req: req}
	if p.RequestState == nil {
		// A retry without state (none was issued, or a client that keeps
		// none): the answers stand on their own. They are the client's own
		// words either way; the state only protects what the server kept.
		for k, v := range p.InputResponses {
			round.answers[k] = v
		}
		return round, nil
	}
	st, err := s.openState(ctx, *p.RequestState, s.callerKey(req), round.binding)
	if refused, ok := errors.AsType[*Error](err); ok {
		return round, refused // the caller holds its share (stateShareRefusal)
	}
	switch {
	case errors.Is(err, errStatesFull):
		return round, Errorf(protocol.CodeServerBusy, "cannot tell whether the requestState was used: retry later")
	case err != nil:
		return round, Errorf(protocol.CodeInvalidParams, "invalid requestState: it was altered, has expired, was used already, or belongs to another request or caller")
	}
	for k, v := range st.Answers {
		round.answers[k] = v
	}
	round.carried = st.Carried
	for _, k := range st.Pending {
		if v, ok := p.InputResponses[k]; ok {
			round.answers[k] = v
		}
	}
	return round, nil
}

// plainRound reports whether params, a request's valid JSON params, is an
// object with no member that encoding/json would read as inputResponses or
// requestState (its names match ignoring case, with the simple Unicode
// folding that bytes.EqualFold applies too): readRound then has nothing to
// read. Only the names of params' own members are looked at, escapes
// decoded; the values are skipped.
func plainRound(params json.RawMessage) bool {
	if len(params) == 0 || params[0] != '{' {
		return false
	}
	plain := true
	ok := jsonscan.EachMember(params, func(key, _ []byte) {
		plain = plain && !isRoundKey(key)
	})
	return ok && plain
}

// isRoundKey reports whether a member name of params is one of a retried
// round's, under any case, as encoding/json matches the fields it decodes
// them into (readRound).
func isRoundKey(key []byte) bool {
	return bytes.EqualFold(key, []byte("inputResponses")) || bytes.EqualFold(key, []byte("requestState"))
}

// binding names what a requestState may be replayed with: the method, its
// target, and a digest of the arguments (re-encoded, so that key order does
// not matter).
func binding(method, name, uri string, args json.RawMessage) string {
	var v any
	canonical := args
	if json.Unmarshal(args, &v) == nil {
		canonical, _ = json.Marshal(v)
	}
	sum := sha256.Sum256(canonical)
	return method + "\x00" + name + uri + "\x00" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// ask is the stateless path of a call to the client: the recorded answer
// when the client gave one, else an interruption that asks for it. The key
// of a call is its method and its position among the handler's calls of
// that method, which is stable as long as the handler asks in the same
// order each run.
func (r *mrtrRound) ask(ctx context.Context, method string, params, result any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	key, named := ctx.Value(inputKeyKey{}).(string)
	if !named {
		key = fmt.Sprintf("%s-%d", strings.ReplaceAll(method, "/", "-"), r.calls[method])
		if r.calls == nil {
			r.calls = map[string]int{}
		}
		r.calls[method]++
	}
	if raw, ok := r.answers[key]; ok {
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(raw, result); err != nil {
			return fmt.Errorf("mcp: %s: malformed answer from the client: %w", method, err)
		}
		return nil
	}
	if r.asked == nil {
		r.asked = map[string]inputRequest{}
	}
	r.asked[key] = newInputRequest(method, params)
	return &inputRequired{method: method}
}

// inputRequiredResult builds the input_required result of a handler that
// round r interrupted, with a requestState carrying the answers so far.
func (s *Server) inputRequiredResult(r *mrtrRound) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := requestState{Answers: r.answers, Expires: time.Now().Add(s.cfg.stateTTL).Unix()}
	for k := range r.asked {
		st.Pending = append(st.Pending, k)
	}
	token, err := s.sealState(st, s.callerKey(r.req), r.bound())
	if err != nil {
		return nil, err
	}
	return struct {
		ResultType    string                  `json:"resultType"`
		InputRequests map[string]inputRequest `json:"inputRequests"`
		RequestState  string                  `json:"requestState"`
	}{"input_required", r.asked, token}, nil
}

// maxStateBytes bounds a requestState a client sends back: what a server
// seals is its answers so far, which the request size bounds already.
const maxStateBytes = 1 << 20

// stateAD is what a requestState is bound to, authenticated by the seal
// but not stored: its purpose, the caller's key (length-prefixed, so that
// no caller key and binding pair reads as another) and the binding.
func stateAD(caller, binding string) []byte {
	ad := make([]byte, 0, len("requestState")+binary.MaxVarintLen64+len(caller)+len(binding))
	ad = append(ad, "requestState"...)
	ad = binary.AppendUvarint(ad, uint64(len(caller)))
	ad = append(ad, caller...)
	return append(ad, binding...)
}

// sealState encodes a request state and seals it (AES-GCM) to the caller
// and the binding: base64url of the nonce, the ciphertext and its tag.
func (s *Server) sealState(st requestState, caller, binding string) (string, error) {
	payload, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(s.stateKeys.Seal(nil, payload, stateAD(caller, binding))), nil
}

var (
	errBadState   = errors.New("mcp: bad requestState")
	errStatesFull = errors.New("mcp: the requestStates used cannot be recorded")
)

// openState opens a request state sealed to caller and binding, and
// checks that it has not expired and was not used before: a state is
// accepted once (see usedStates and WithUsedRequestStates). In memory, a
// caller holding its share of the states used is refused with an *Error
// (stateShareRefusal).
func (s *Server) openState(ctx context.Context, token, caller, binding string) (requestState, error) {
	var st requestState
	if len(token) > maxStateBytes {
		return st, errBadState
	}
	sealed, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return st, errBadState
	}
	payload, err := s.stateKeys.Open(nil, sealed, stateAD(caller, binding))
	if err != nil {
		return st, errBadState
	}
	now := time.Now().Unix()
	if err := json.Unmarshal(payload, &st); err != nil || now > st.Expires {
		return st, errBadState
	}
	digest := stateDigest(sealed)
	if use := s.cfg.useState; use != nil {
		first, err := use(ctx, hex.EncodeToString(digest[:]), time.Duration(st.Expires-now+1)*time.Second)
		switch {
		case err != nil:
			s.cfg.logger.Warn("mcp: cannot record a requestState used", "error", err)
			return st, errStatesFull
		case !first:
			return st, errBadState
		}
		return st, nil
	}
	switch use, freeAt := s.usedStates.use(digest, caller, s.cfg.callerKey != nil, st.Expires, now); use {
	case stateUsed:
		return st, errBadState
	case stateShare:
		return st, stateShareRefusal(time.Duration(freeAt-now) * time.Second)
	case stateFull:
		return st, errStatesFull
	}
	return st, nil
}

// CallClient asks the client something on behalf of the handler whose
// context ctx is, decoding the answer into result (when non-nil). It is the
// era-independent form of [Session.Call]: in a 2025 session it sends the
// request and waits; in a stateless 2026-07-28 request it returns the
// client's answer from the retried request, or an error that the handler
// must return as is (it becomes the input_required result that asks the
// client). Elicit, CreateMessage and ListRoots are built on it. In a
// task's handler (see [RunAsTask]) the call blocks until the client
// answers: in a 2025 task it is a request on the session while the task is
// input_required; in a 2026-07-28 task the task is input_required, lists
// the question in tasks/get, and tasks/update brings the answer.
//
// A method that needs a client capability the client did not declare fails
// with an error wrapping [ErrCapability]; in a stateless request that error
// is an [*Error] with [protocol.CodeMissingRequiredClientCapability].
func CallClient(ctx context.Context, method string, params, result any) error {
	req := RequestFromContext(ctx)
	if req == nil {
		return errors.New("mcp: CallClient needs a handler's context")
	}
	return req.era.callClient(ctx, req, method, params, result)
}

type inputKeyKey struct{}

// ContextWithInputKey returns a copy of ctx that names key the next
// question a handler asks the client through it (CallClient, Elicit,
// CreateMessage, ListRoots). In a stateless 2026-07-28 request the name is
// the key of the question in the input_required result and of its answer
// in the retry's inputResponses; without it, keys are derived from the
// method and the order of the calls ("elicitation-create-0"). Give names
// when a client or a test expects particular keys, or when the order of
// questions may vary between runs. In a 2025 session the name is ignored.
func ContextWithInputKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, inputKeyKey{}, key)
}
