package protocol

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

// Versions returns every protocol version, newest first: 2026-07-28, then
// the session versions.
func Versions() []string {
	return []string{Version20260728, Version20251125, Version20250618, Version20250326, Version20241105}
}
