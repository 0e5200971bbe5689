package protocol_test

import (
	"fmt"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// A version string decides the era and what the era allows.
func ExampleVersions() {
	for _, v := range protocol.Versions() {
		fmt.Printf("%s session=%v batches=%v\n", v, protocol.IsSessionVersion(v), protocol.BatchesAllowed(v))
	}
	// Output:
	// 2026-07-28 session=false batches=false
	// 2025-11-25 session=true batches=false
	// 2025-06-18 session=true batches=false
	// 2025-03-26 session=true batches=true
	// 2024-11-05 session=true batches=true
}

// A reason's String is its metric label; Message is what a client is told.
func ExampleRejectReason() {
	for _, r := range []protocol.RejectReason{protocol.RejectDuplicateID, protocol.RejectSessionPrincipal} {
		fmt.Printf("%s: %s\n", r, r.Message())
	}
	// Output:
	// duplicate_id: duplicate request id: a request with this id is still in flight
	// session_principal_mismatch: unknown or terminated session
}
