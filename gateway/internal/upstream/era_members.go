package upstream

import (
	"bytes"
	"encoding/json"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
)

// What an upstream's result may not say to the gateway's callers: the
// members the 2026-07-28 era gives every result (resultType, the
// input_required round's inputRequests and requestState, the cache hints
// ttlMs and cacheScope), which the gateway's own server writes for its
// callers, and the _meta keys the protocol reserves
// (io.modelcontextprotocol/..., the server's info among them), which only
// the gateway sets. A 2025-era upstream's result has none of them: any it
// has is forged (a caller would take "input_required" for a round of the
// gateway's, or the upstream's serverInfo for the gateway's). A
// 2026-07-28 upstream's are read by the gateway (rounds, tasks) before
// the rest of its result is relayed without them.

// eraResultMembers are the top-level members of a 2026-07-28 result.
var eraResultMembers = map[string]bool{
	"resultType": true, "inputRequests": true, "requestState": true, "ttlMs": true, "cacheScope": true,
}

// reservedMetaPrefix begins every _meta key the protocol reserves.
const reservedMetaPrefix = "io.modelcontextprotocol/"

// WithoutEraMembers returns the JSON object res without the 2026-07-28
// era's result members and without the reserved keys of its _meta (a
// _meta left empty goes too). Names are matched as decoded, escapes
// included. A result with none of them, the usual one, is returned as it
// is; otherwise the members kept are copied as they are (a name written
// with escapes is written again, escaped as encoding/json would). res
// that is not a valid JSON object is returned as it is.
func WithoutEraMembers(res json.RawMessage) json.RawMessage {
	if !jsonscan.Valid(res) {
		return res
	}
	return withoutEraMembers(res)
}

// withoutEraMembers is WithoutEraMembers for res known to be valid JSON
// (a decoded message's result).
func withoutEraMembers(res json.RawMessage) json.RawMessage {
	found := false
	if !jsonscan.EachMember(res, func(key, val []byte) {
		found = found || eraResultMembers[string(key)] || (string(key) == "_meta" && reservedMeta(val))
	}) || !found {
		return res
	}
	out := make([]byte, 0, len(res))
	out = append(out, '{')
	jsonscan.EachMember(res, func(key, val []byte) {
		if eraResultMembers[string(key)] {
			return
		}
		if string(key) == "_meta" {
			if val = withoutReservedMeta(val); val == nil {
				return
			}
		}
		out = appendResultMember(out, key, val)
	})
	return append(out, '}')
}

// reservedMeta reports whether the JSON value meta is an object with a
// reserved key.
func reservedMeta(meta []byte) bool {
	found := false
	jsonscan.EachMember(meta, func(key, _ []byte) {
		found = found || bytes.HasPrefix(key, []byte(reservedMetaPrefix))
	})
	return found
}

// withoutReservedMeta returns the _meta value meta without its reserved
// keys, or nil when nothing is left of it; meta as it is when it has
// none (or is not an object).
func withoutReservedMeta(meta []byte) []byte {
	if !reservedMeta(meta) {
		return meta
	}
	out := make([]byte, 0, len(meta))
	out = append(out, '{')
	jsonscan.EachMember(meta, func(key, val []byte) {
		if !bytes.HasPrefix(key, []byte(reservedMetaPrefix)) {
			out = appendResultMember(out, key, val)
		}
	})
	if len(out) == 1 {
		return nil
	}
	return append(out, '}')
}

// appendResultMember appends the member key (decoded), val to the object being
// written in out, after a comma unless it is the first.
func appendResultMember(out, key, val []byte) []byte {
	if len(out) > 1 {
		out = append(out, ',')
	}
	out = jsonscan.AppendString(out, string(key))
	return append(append(out, ':'), val...)
}
