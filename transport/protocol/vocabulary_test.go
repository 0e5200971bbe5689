package protocol_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

func TestCodeString(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "-32602", protocol.CodeInvalidParams.String())
	seen := map[protocol.Code]bool{}
	for _, c := range protocol.Codes() {
		assert.False(t, seen[c], "%d listed twice", c)
		seen[c] = true
		assert.Less(t, int64(c), int64(-31999), "%d is a JSON-RPC server or reserved code", c)
	}
	assert.Len(t, seen, 12)
}

func TestVersions(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}, protocol.Versions())
}

// Every outcome value has a distinct, non-empty label, which is also its
// JSON form; values past the known ones read as the catch-all.
func TestOutcomeLabels(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, labels []string, want []string) {
		t.Helper()
		assert.Equal(t, want, labels)
	}
	var cancels, drops, classes, rejects []string
	for _, r := range protocol.CancelReasons() {
		cancels = append(cancels, r.String())
	}
	for _, r := range protocol.DropReasons() {
		drops = append(drops, r.String())
	}
	for _, r := range []protocol.DropReason{protocol.DropWriterClosed, protocol.DropPeerGone} {
		classes = append(classes, r.String())
	}
	for _, r := range protocol.RejectReasons() {
		rejects = append(rejects, r.String())
		assert.NotEmpty(t, r.Message(), r.String())
	}
	check(t, cancels, []string{"client_cancel", "transport_close", "stream_close", "shutdown", "timeout", "upstream_closed", "other"})
	check(t, drops, []string{"cancelled", "writer_closed", "peer_gone", "shutdown"})
	check(t, classes, []string{"writer_closed", "peer_gone"})
	check(t, rejects, []string{
		"parse_error", "invalid_request", "duplicate_id", "lifecycle", "frame_too_large", "in_flight_limit",
		"shutting_down", "invalid_params", "unknown_response", "protocol_mismatch", "forbidden",
		"session_limit", "unknown_session", "session_principal_mismatch", "overloaded", "store_unavailable", "memory_budget",
		"cancel_unproven", "cancel_relay_limit", "other",
	})
	assert.Equal(t, "none", protocol.ReasonNone.String())
	assert.Empty(t, protocol.DropNone.String())
	assert.Equal(t, "other", protocol.CancelReason(200).String())
	assert.Empty(t, protocol.DropReason(200).String())
	assert.Equal(t, "other", protocol.RejectReason(200).String())
	assert.Equal(t, protocol.RejectOther.Message(), protocol.RejectReason(200).Message())

	b, err := json.Marshal(struct {
		C protocol.CancelReason
		D protocol.DropReason
		R protocol.RejectReason
	}{protocol.ReasonTimeout, protocol.DropPeerGone, protocol.RejectDuplicateID})
	require.NoError(t, err)
	assert.JSONEq(t, `{"C":"timeout","D":"peer_gone","R":"duplicate_id"}`, string(b))
}

// TestQuotaLabels pins the quota labels, their order, the catch-all and
// their JSON form.
func TestQuotaLabels(t *testing.T) {
	t.Parallel()
	var got []string
	for _, q := range protocol.Quotas() {
		got = append(got, q.String())
	}
	assert.Equal(t, []string{"sessions", "in_flight", "tasks", "tool_share", "rate", "tool_rate", "bytes", "other"}, got)
	assert.Equal(t, "other", protocol.Quota(200).String())
	b, err := json.Marshal(struct{ Q protocol.Quota }{protocol.QuotaToolShare})
	require.NoError(t, err)
	assert.JSONEq(t, `{"Q":"tool_share"}`, string(b))
}
