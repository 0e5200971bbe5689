package vocab

import (
	"slices"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// SessionVersions returns the protocol versions of the session era that
// initialize negotiates, newest first.
func SessionVersions() []string {
	return []string{protocol.Version20251125, protocol.Version20250618, protocol.Version20250326, protocol.Version20241105}
}

// IsSessionVersion reports whether v is a protocol version of the session
// era.
func IsSessionVersion(v string) bool { return slices.Contains(SessionVersions(), v) }

// BatchesAllowed reports whether JSON-RPC batches are part of version v
// (they were dropped in 2025-06-18).
func BatchesAllowed(v string) bool {
	return v == protocol.Version20250326 || v == protocol.Version20241105
}
