package openapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/vigil-mcp/vigil/internal/vocab"
)

// MaxToolNameLen bounds a tool's name: MCP allows 128 bytes, and 64 leaves
// room for the gateway's upstream prefix and fits clients that cap names
// at 64.
const MaxToolNameLen = 64

// A Tool is one operation of the description as an MCP tool.
//
// Its Name is the operationId with every byte outside MCP's tool-name
// characters (ASCII letters, digits, '_', '-', '.') replaced by '_'. An
// operation without an operationId is named from its lowercase method and
// path: "GET /pets/{petId}" is "get_pets_petId" (braces dropped, each run
// of other characters one '_'). A name longer than MaxToolNameLen keeps
// its first 55 bytes and ends with '_' and 8 hex digits of the SHA-256 of
// the whole name; a name taken by an earlier operation (by path, then
// method) gets "_2", "_3", … so that names are unique and stable for a
// given description.
type Tool struct {
	Name        string
	Title       string // the operation's summary
	Description string // the operation's description, else its summary
	// InputSchema is a JSON Schema 2020-12 object: one property per path,
	// query, header and cookie parameter (by its name; a name two
	// locations share is suffixed "_" and the location for the later one),
	// and "body" (or "body_", …) for a JSON request body.
	InputSchema json.RawMessage
	// OutputSchema is the JSON success response's schema, nil when the
	// operation has none. A schema that is not of type object is wrapped
	// as the property "result" of one, as MCP wants an object.
	OutputSchema json.RawMessage
	ReadOnly     bool // GET and HEAD
	Idempotent   bool // PUT and DELETE
	// Method and Path are the operation's: "GET" and the path template as
	// the description writes it ("/pets/{petId}"); Tags are its tags, in
	// the description's order. The gateway's catalog selects tools by them.
	Method, Path string
	Tags         []string
}

// toolName is the name of the operation by the rule of [Tool], recorded in
// taken.
func toolName(operationID, method, path string, taken map[string]bool) string {
	name := sanitize(operationID)
	if name == "" {
		name = sanitize(strings.ToLower(method) + " " + strings.NewReplacer("{", "", "}", "").Replace(path))
	}
	if name == "" {
		name = strings.ToLower(method)
	}
	base := name
	name = shorten(base, MaxToolNameLen)
	for i := 2; taken[name] || !vocab.ValidToolName(name); i++ {
		suffix := "_" + strconv.Itoa(i)
		name = shorten(base, MaxToolNameLen-len(suffix)) + suffix
	}
	taken[name] = true
	return name
}

// sanitize replaces each run of bytes outside MCP's tool-name characters
// with one '_' and trims '_' at both ends.
func sanitize(s string) string {
	var b strings.Builder
	under := false
	for i := range len(s) {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' {
			b.WriteByte(c)
			under = false
			continue
		}
		if !under {
			b.WriteByte('_')
			under = true
		}
	}
	return strings.Trim(b.String(), "_")
}

// shorten returns name if it fits in n bytes, else its first n-9 bytes,
// '_' and 8 hex digits of its SHA-256.
func shorten(name string, n int) string {
	if len(name) <= n {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:n-9] + "_" + hex.EncodeToString(sum[:4])
}
