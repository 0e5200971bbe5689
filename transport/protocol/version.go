package protocol

import "slices"

// Version20260728 is the stateless protocol revision: no initialize, the
// version and client capabilities travel in every request's _meta.
const Version20260728 = "2026-07-28"

// The protocol versions of the initialize (session) era, newest first.
const (
	Version20251125 = "2025-11-25"
	Version20250618 = "2025-06-18"
	Version20250326 = "2025-03-26"
	Version20241105 = "2024-11-05"
)

// SessionVersions returns the protocol versions of the session era that
// initialize negotiates, newest first.
func SessionVersions() []string {
	return []string{Version20251125, Version20250618, Version20250326, Version20241105}
}

// Versions returns every protocol version, newest first: 2026-07-28, then
// the session versions.
func Versions() []string { return append([]string{Version20260728}, SessionVersions()...) }

// IsSessionVersion reports whether v is a protocol version of the session
// era.
func IsSessionVersion(v string) bool { return slices.Contains(SessionVersions(), v) }

// BatchesAllowed reports whether JSON-RPC batches are part of version v
// (they were dropped in 2025-06-18).
func BatchesAllowed(v string) bool { return v == Version20250326 || v == Version20241105 }
