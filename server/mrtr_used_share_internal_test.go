package server

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// One caller cannot fill the requestStates used for everyone (issue 66):
// at the default size, mallory retrying with fresh states, each sealed to
// her, is refused once she holds half of the table, with a quota refusal
// (-32000, data.quota, a message naming the share, Retry-After when her
// first state expires); alice's first retry with a fresh state then
// succeeds, and so do bob's and the anonymous caller's.
// Before, mallory filled all 65,536 and alice got "retry later".
func TestRequestStateShareAtDefaultSize(t *testing.T) {
	t.Parallel()
	s := New(WithCallerKey(func(r *Request) string { return r.ClientInfo.Name }))
	args := json.RawMessage(`{"x":1}`)
	retry := func(caller string) *Error {
		st := requestState{Answers: map[string]json.RawMessage{"q": json.RawMessage(`"a"`)}, Expires: time.Now().Add(time.Hour).Unix()}
		token, err := s.sealState(st, caller, binding("tools/call", "greet", "", args))
		require.NoError(t, err)
		params, err := json.Marshal(map[string]any{"name": "greet", "arguments": args, "requestState": token})
		require.NoError(t, err)
		req := &Request{Method: "tools/call", Name: "greet", Params: params, ClientInfo: Implementation{Name: caller}}
		var first mrtrRound
		round, e := s.readRound(context.Background(), req, &first)
		if e == nil {
			require.JSONEq(t, `"a"`, string(round.answers["q"]), "the state's answers")
		}
		return e
	}
	held := 0
	var refused *Error
	for ; held <= maxUsedStates; held++ {
		if refused = retry("mallory"); refused != nil {
			break
		}
	}
	require.NotNil(t, refused, "mallory was never refused")
	assert.Nil(t, retry("alice"), "another caller's first use of a fresh state")
	assert.Nil(t, retry("bob"))
	assert.Nil(t, retry(""), "the anonymous caller is a caller too")
	assert.NotNil(t, retry("mallory"), "mallory still holds her share")

	assert.Equal(t, maxUsedStates/2, held, "one caller holds at most half")
	assert.Equal(t, protocol.CodeServerBusy, refused.Code)
	assert.Contains(t, refused.Message, "share of the requestStates")
	q, ok := errors.AsType[*QuotaError](refused)
	if assert.True(t, ok, "a quota refusal: 429 and Retry-After over HTTP") {
		assert.Equal(t, protocol.QuotaOther, q.Quota)
		var data struct {
			Quota      string `json:"quota"`
			RetryAfter int64  `json:"retryAfterSeconds"`
		}
		require.NoError(t, json.Unmarshal(refused.Data, &data))
		assert.Equal(t, "other", data.Quota)
		assert.InDelta(t, 3600, data.RetryAfter, 60, "when mallory's first state expires")
	}
}
