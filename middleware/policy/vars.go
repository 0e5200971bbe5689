package policy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// principalVars is the variable principal.
type principalVars struct {
	Subject  string   `cel:"subject"`
	Issuer   string   `cel:"issuer"`
	ClientID string   `cel:"client_id"`
	Scopes   []string `cel:"scopes"`
	Claims   *dynMap  `cel:"claims"`
	Actor    []string `cel:"actor"`
}

// toolVars is the variable tool.
type toolVars struct {
	Name        string  `cel:"name"`
	Annotations *dynMap `cel:"annotations"`
}

// requestVars is the variable request.
type requestVars struct {
	Era       string `cel:"era"`
	Transport string `cel:"transport"`
	Session   string `cel:"session"`
}

// mapOfDyn is the CEL type of claims and annotations: map(string, dyn).
var mapOfDyn = types.NewMapType(types.StringType, types.DynType)

// dynMap is a map of JSON values as a field of a native type: CEL's native
// types take no map[string]any field, but take a ref.Val, whose type the
// checker reads from Type (of a zero dynMap, hence not from Mapper).
type dynMap struct{ traits.Mapper }

// Type returns map(string, dyn).
func (*dynMap) Type() ref.Type { return mapOfDyn }

func newDynMap(m map[string]any) *dynMap {
	return &dynMap{types.DefaultTypeAdapter.NativeToValue(m).(traits.Mapper)}
}

// principalOf returns the variable principal of p.
func principalOf(p *auth.Principal) *principalVars {
	scopes := p.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	claims := p.Claims
	if claims == nil {
		claims = map[string]any{}
	}
	return &principalVars{Subject: p.Subject, Issuer: p.Issuer, ClientID: p.ClientID, Scopes: scopes, Claims: newDynMap(claims), Actor: actorsOf(p)}
}

// actorsOf returns the subjects of p's act chain (RFC 8693 §4.1), the
// one acting now first, as the verifier read them (Principal.Actors,
// bounded there); an empty list for a token of the subject's own.
func actorsOf(p *auth.Principal) []string {
	if p.Actors == nil {
		return []string{}
	}
	return p.Actors
}

// toolOf returns the variable tool of t.
func toolOf(t *server.Tool) *toolVars {
	annotations := map[string]any{}
	if a := t.Annotations; a != nil {
		if a.Title != "" {
			annotations["title"] = a.Title
		}
		for name, hint := range map[string]*bool{"readOnlyHint": a.ReadOnlyHint, "destructiveHint": a.DestructiveHint, "idempotentHint": a.IdempotentHint, "openWorldHint": a.OpenWorldHint} {
			if hint != nil {
				annotations[name] = *hint
			}
		}
	}
	return &toolVars{Name: t.Name, Annotations: newDynMap(annotations)}
}

// requestOf returns the variable request of req.
func requestOf(req *server.Request) *requestVars {
	v := &requestVars{Era: "2025"}
	if req.Protocol == protocol.Version20260728 {
		v.Era = "2026"
	}
	ctx := req.ArrivalContext()
	v.Transport = mcpconv.TransportFromContext(ctx)
	if v.Transport == "" && ctx.Value(http.LocalAddrContextKey) != nil {
		v.Transport = mcpconv.TransportStreamableHTTP
	}
	if req.InSession() {
		v.Session = req.Session.ID()
	}
	return v
}

// decodeArguments decodes a call's arguments, a JSON object the server
// validated: an integer becomes an int64 (CEL int), any other number a
// float64 (CEL double).
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	for k, v := range m {
		m[k] = numbers(v)
	}
	return m, nil
}

// numbers returns v with its json.Numbers made int64 or float64.
func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(string(v), 64)
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	}
	return v
}
