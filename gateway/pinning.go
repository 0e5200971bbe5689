package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/vigil-mcp/vigil/internal/invisible"
	"github.com/vigil-mcp/vigil/server"
)

// lockFile is the catalog lock (vigil -catalog-lock FILE): each pinned
// upstream's tools as they were approved, by served name.
type lockFile struct {
	Tools map[string]lockedTool `json:"tools"`
}

// lockedTool is one approved definition: its upstream, its digest
// (SHA-256 of the canonical JSON of definition) and the definition.
type lockedTool struct {
	Upstream   string          `json:"upstream"`
	Digest     string          `json:"digest"`
	Definition json.RawMessage `json:"definition"`
}

// pinnedDefinition is what a digest covers of a served tool.
type pinnedDefinition struct {
	Name         string                  `json:"name"`
	Title        string                  `json:"title,omitempty"`
	Description  string                  `json:"description,omitempty"`
	InputSchema  json.RawMessage         `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage         `json:"outputSchema,omitempty"`
	Annotations  *server.ToolAnnotations `json:"annotations,omitempty"`
	// OpenAPI is, for an OpenAPI upstream's tool, the digest of the
	// upstream's description (restAPI.digest): what a call does (its
	// method, path, where each argument goes) is the description's, not
	// in the tool's definition, so a changed description is a changed
	// tool.
	OpenAPI string `json:"openapi,omitempty"`
}

// definitionOf returns the canonical JSON of t's pinned definition (its
// objects' members sorted, as encoding/json writes a map), with
// description the digest of its OpenAPI upstream's description (""
// for another upstream's), and its digest.
func definitionOf(t *server.Tool, description string) (json.RawMessage, string, error) {
	raw, err := json.Marshal(pinnedDefinition{t.Name, t.Title, t.Description, t.InputSchema, t.OutputSchema, t.Annotations, description})
	if err != nil {
		return nil, "", err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "", err
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(canon)
	return canon, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// WithLock returns the catalog with the lock file lock (vigil
// -catalog-lock FILE, as [Gateway.Lock] writes it): the approved
// definitions of the tools of each upstream whose pin is warn or hold.
// An empty lock approves nothing. It fails for a lock that is not one.
func (c *Catalog) WithLock(lock []byte) (*Catalog, error) {
	out := *c
	out.lock = &lockFile{Tools: map[string]lockedTool{}}
	if len(bytes.TrimSpace(lock)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(lock))
		dec.DisallowUnknownFields()
		if err := dec.Decode(out.lock); err != nil {
			return nil, fmt.Errorf("gateway: catalog lock: %w", err)
		}
	}
	return &out, nil
}

// pin applies the upstream's pin to t, its tool as the catalog serves it
// (own: the upstream's name of it), and records its definition in cat
// for Gateway.Lock. It returns false when the tool is withheld: a new
// tool, or one whose schema changed, under hold. A change (a definition
// whose digest the lock does not hold) is logged and counted once per
// served name and digest; under warn the tool is served as it is now;
// under hold, when only its text changed (title, description,
// annotations), the approved text is served instead (not when its
// OpenAPI upstream's description changed: the call would be the new
// description's).
func (m *mount) pin(cat *catalog, cur *upstreamCuration, t *server.Tool, own string) bool {
	if cur == nil || cur.pin == "" {
		return true
	}
	description := m.rest.descriptionDigest() // openapi.go
	def, digest, err := definitionOf(t, description)
	if err != nil {
		m.withhold(own, err)
		return false
	}
	if cat.defs == nil {
		cat.defs = map[string]lockedTool{}
	}
	cat.defs[t.Name] = lockedTool{Upstream: m.up.Name, Digest: digest, Definition: def}
	c := m.g.catalog.Load()
	if c == nil || c.lock == nil {
		return true // no lock to hold the definitions to
	}
	approved, known := c.lock.Tools[t.Name]
	if known && approved.Upstream == m.up.Name && approved.Digest == digest {
		return true
	}
	i, _ := slices.BinarySearch(cat.changed, t.Name)
	cat.changed = slices.Insert(cat.changed, i, t.Name) // for the live page (Gateway.Upstreams)
	what := "a tool not in the catalog lock"
	if known {
		what = "a tool whose definition is not the one in the catalog lock"
	}
	var was pinnedDefinition
	compatible := known && json.Unmarshal(approved.Definition, &was) == nil &&
		jsonEqual(was.InputSchema, t.InputSchema) && jsonEqual(was.OutputSchema, t.OutputSchema) &&
		was.OpenAPI == description // what the call does is the description's: a new one is not the approved tool
	decision, audited := "served as it is now", pinServed
	if cur.pin == pinHold {
		decision, audited = "withheld until the lock is rewritten", pinWithheld
		if compatible {
			decision, audited = "served as the lock has it", pinServedApproved
		}
	}
	if _, told := m.pinned.LoadOrStore(t.Name+" "+digest, true); !told {
		m.log.Warn("gateway: catalog pin: "+what+": "+decision, "upstream", m.up.Name, "tool", t.Name, "upstream_tool", own, "pin", cur.pin, "digest", digest, "approved_digest", approved.Digest)
		m.g.obs.PinChanged(m.up.Name, cur.pin)
		change := "new"
		if known {
			change = "changed"
		}
		m.auditPin(pinAudit{Upstream: m.up.Name, Tool: t.Name, UpstreamTool: own, Pin: cur.pin, Change: change, Decision: audited, Digest: digest, ApprovedDigest: approved.Digest})
	}
	switch {
	case cur.pin == pinWarn:
		return true
	case compatible:
		t.Title, t.Description, t.Annotations = was.Title, was.Description, was.Annotations
		return true
	}
	m.withhold(t.Name+" "+digest, fmt.Errorf("pin hold: %s", what))
	return false
}

// The decisions of a pin change, as its audit line names them.
const (
	pinServed         = "served"          // warn: served as the upstream lists it now
	pinServedApproved = "served_approved" // hold, only the text changed: served as the lock has it
	pinWithheld       = "withheld"        // hold, a new tool or a changed schema: neither listed nor callable
)

// pinAudit is the audit line of a pin change (Config.AuditLog; its
// members are listed in docs/operations.md, "Audit log"). Event tells it
// from the line of a tool call, which has none.
type pinAudit struct {
	Time           time.Time `json:"time"`
	Event          string    `json:"event"` // catalog_pin_change
	Upstream       string    `json:"upstream"`
	Tool           string    `json:"tool"`          // the served name (cut to 128 B)
	UpstreamTool   string    `json:"upstream_tool"` // the upstream's name of it (cut to 128 B)
	Pin            string    `json:"pin"`           // warn or hold
	Change         string    `json:"change"`        // new (not in the lock) or changed
	Decision       string    `json:"decision"`      // served, served_approved or withheld
	Digest         string    `json:"digest"`
	ApprovedDigest string    `json:"approved_digest,omitempty"` // absent for a new tool
	Truncated      bool      `json:"truncated,omitempty"`       // a name was cut to its bound
}

// auditMaxName bounds each tool name of a pin change's audit line, in
// bytes (the MCP limit of a tool name).
const auditMaxName = 128

// auditPin writes rec, stamped now, to the gateway's audit log, if any:
// one JSON line, the names an upstream chose cut to their bound and
// their invisible characters escaped (\u202e), as the audit log of
// calls writes them.
func (m *mount) auditPin(rec pinAudit) {
	if m.g.audit == nil {
		return
	}
	rec.Time, rec.Event = m.now(), "catalog_pin_change"
	rec.Tool = cutName(rec.Tool, &rec.Truncated)
	rec.UpstreamTool = cutName(rec.UpstreamTool, &rec.Truncated)
	line, err := json.Marshal(rec)
	if err != nil {
		return
	}
	_, _ = m.g.audit.Write(append(invisible.Escape(line), '\n'))
}

// cutName returns s cut to auditMaxName bytes at a character boundary,
// setting *cut when it was.
func cutName(s string, cut *bool) string {
	if len(s) <= auditMaxName {
		return s
	}
	*cut = true
	n := auditMaxName
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// jsonEqual reports whether a and b are the same JSON value (nil and
// empty alike).
func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// Lock returns the catalog lock of what the upstreams whose pin is warn
// or hold list now, as the catalog serves it (JSON, for vigil
// -catalog-lock FILE and [Catalog.WithLock]): writing it approves every
// definition, changed or new, each by its served name.
func (g *Gateway) Lock() []byte {
	g.mu.Lock()
	lock := lockFile{Tools: map[string]lockedTool{}}
	for _, m := range g.mounts {
		if m.cat != nil {
			maps.Copy(lock.Tools, m.cat.defs)
		}
	}
	g.mu.Unlock()
	out, _ := json.MarshalIndent(lock, "", "  ") // strings and JSON that decoded; a map's keys sorted
	return append(out, '\n')
}
