package vocab

import "strings"

// ValidToolName reports whether name follows MCP's tool-name rules: 1 to
// 128 bytes of ASCII letters, digits, '_', '-' and '.'. The server refuses
// to register a tool by another name; the gateway and the policies check
// the names they are given with it.
func ValidToolName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.", r)
		if !ok {
			return false
		}
	}
	return true
}
