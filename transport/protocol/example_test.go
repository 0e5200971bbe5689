package protocol_test

import (
	"fmt"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Every version a Vigil server speaks, newest first: the stateless
// revision, then those of the session era that initialize negotiates.
func ExampleVersions() {
	for _, v := range protocol.Versions() {
		fmt.Println(v, v == protocol.Version20260728)
	}
	// Output:
	// 2026-07-28 true
	// 2025-11-25 false
	// 2025-06-18 false
	// 2025-03-26 false
	// 2024-11-05 false
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
