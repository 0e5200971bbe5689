package paramheader_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/paramheader"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCheck(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"count":{"type":"integer","x-mcp-header":"Count"},
		"note":{"type":"string"}}}`)
	tests := []struct {
		name, args string
		header     http.Header
		want       string
	}{
		{"match", `{"region":"eu","count":3}`, http.Header{"Mcp-Param-Region": {"eu"}, "Mcp-Param-Count": {"3"}}, ""},
		{"base64", `{"region":"é"}`, http.Header{"Mcp-Param-Region": {"=?base64?w6k=?="}}, ""},
		{"absent argument needs no header", `{"note":"x"}`, http.Header{}, ""},
		{"null argument needs no header", `{"region":null}`, http.Header{}, ""},
		{"missing header", `{"region":"eu"}`, http.Header{}, `missing Mcp-Param-Region header for argument "region"`},
		{"mismatch", `{"count":3}`, http.Header{"Mcp-Param-Count": {"4"}}, `Mcp-Param-Count header does not match argument "count"`},
		{"bad base64", `{"region":"eu"}`, http.Header{"Mcp-Param-Region": {"=?base64?!!?="}}, "Mcp-Param-Region header is not valid: bad base64 encoding"},
		{"literal that looks encoded", `{"region":"=?base64?x"}`, http.Header{"Mcp-Param-Region": {"=?base64?x"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, paramheader.Check(tt.header, paramheader.Mirrors(schema), json.RawMessage(tt.args)))
		})
	}
	assert.Empty(t, paramheader.Check(http.Header{}, paramheader.Mirrors(json.RawMessage(`not json`)), json.RawMessage(`{"region":"eu"}`)), "no schema, nothing to check")
}

func TestContext(t *testing.T) {
	t.Parallel()
	_, ok := paramheader.HeaderFromContext(context.Background())
	assert.False(t, ok)
	h := http.Header{"Mcp-Param-A": {"1"}}
	got, ok := paramheader.HeaderFromContext(&paramheader.Carrier{Context: context.Background(), Header: h})
	assert.True(t, ok)
	assert.Equal(t, h, got)
}

// A Carrier carries the headers and everything of its context: values,
// cancellation and its cause, through contexts derived from it too.
func TestCarrier(t *testing.T) {
	t.Parallel()
	type key struct{}
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
	h := http.Header{"Mcp-Param-A": {"1"}}
	c := &paramheader.Carrier{Context: parent, Header: h}
	detached := context.WithoutCancel(c)
	for _, ctx := range []context.Context{c, detached} {
		got, ok := paramheader.HeaderFromContext(ctx)
		assert.True(t, ok)
		assert.Equal(t, h, got)
		assert.Equal(t, "v", ctx.Value(key{}))
	}
	fired := make(chan struct{})
	context.AfterFunc(c, func() { close(fired) })
	boom := errors.New("boom")
	cancel(boom)
	<-fired
	require.ErrorIs(t, c.Err(), context.Canceled)
	assert.Equal(t, boom, context.Cause(c))
	assert.NoError(t, detached.Err(), "WithoutCancel still detaches")
}

// TestSetChecks: what Set sends, Check accepts, for values that travel
// as they are and values that need base64; absent arguments get nothing.
func TestSetChecks(t *testing.T) {
	mirrors := paramheader.Mirrors(json.RawMessage(`{"properties":{"region":{"x-mcp-header":"Region"},"n":{"x-mcp-header":"N"},"note":{"x-mcp-header":"Note"},"gone":{"x-mcp-header":"Gone"}}}`))
	args := json.RawMessage(`{"region":"eu-west-1","n":42,"note":" héllo\n","gone":null}`)
	h := http.Header{}
	paramheader.Set(h, mirrors, args)
	if got := h.Get("Mcp-Param-Region"); got != "eu-west-1" {
		t.Errorf("Region = %q", got)
	}
	if got := h.Get("Mcp-Param-N"); got != "42" {
		t.Errorf("N = %q", got)
	}
	if got := h.Get("Mcp-Param-Note"); !strings.HasPrefix(got, "=?base64?") {
		t.Errorf("Note = %q, want the encoded form", got)
	}
	if _, ok := h["Mcp-Param-Gone"]; ok {
		t.Error("a null argument got a header")
	}
	if why := paramheader.Check(h, mirrors, args); why != "" {
		t.Errorf("Check refuses what Set sent: %s", why)
	}
}
