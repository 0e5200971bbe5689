package policy

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/server"
)

// Bounds of the refusal of arguments whose names a handler could read
// otherwise than the policy ([Set.ToolPolicy]): the names it quotes and the
// JSON pointer of the object holding them, in bytes; the tools whose
// declared property names are remembered (emptied when full); the
// subschemas read within each other (allOf, anyOf, oneOf, if, then, else).
const (
	maxQuotedName    = 64
	maxQuotedPointer = 128
	schemaCacheSize  = 4096
	maxSchemaNesting = 32
)

// ambiguousLogError is the error logged for such a refusal: the names,
// which the client chose, are in its answer, not in the log.
const ambiguousLogError = "arguments refused: member names equal under case folding"

// foldKey returns s folded as encoding/json folds a member name to match
// it to a struct field (foldName, encoding/json/fold.go): each rune
// becomes the smallest of its unicode.SimpleFold orbit, so that the
// Kelvin sign folds as k and ſ (long s) as s, and then A-Z become a-z,
// which keeps the classes and returns a name of lowercase ASCII as it is,
// unallocated. foldKey(x) == foldKey(y) exactly when encoding/json would
// match x and y.
func foldKey(s string) string {
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf && (s[i] < 'A' || s[i] > 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		r = foldRune(r)
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// foldRune returns the smallest rune of r's simple case-folding orbit, as
// encoding/json's foldRune does.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// ambiguousArguments is the cause of the -32602 error that refuses
// arguments before the policy of that name runs: it unwraps to the
// policy's denial, so that the audit log and the live page name it.
type ambiguousArguments struct {
	msg    string
	denied *mcpconv.PolicyDenied
}

func (a *ambiguousArguments) Error() string { return a.msg }
func (a *ambiguousArguments) Unwrap() error { return a.denied }

// ambiguity returns why a handler decoding args, the decoded arguments of
// a call of a tool whose input schema declares decl, into a Go struct
// with encoding/json could read another member than the policy does: ""
// for none. It refuses a top-level member that is not a declared property
// but folds to one, and two members of one object, at any depth, whose
// names fold alike.
func ambiguity(args map[string]any, decl *declared) string {
	for k := range args {
		if _, ok := decl.exact[k]; ok {
			continue
		}
		if p, ok := decl.folded[foldKey(k)]; ok {
			return "member " + quoteName(k) + " is the input schema's property " + quoteName(p) + " under case folding"
		}
	}
	a, b, at, ok := collision(args)
	if !ok {
		return ""
	}
	msg := "members " + quoteName(a) + " and " + quoteName(b)
	if len(at) > 0 {
		msg += " of " + pointer(at)
	}
	return msg + " are one name under case folding"
}

// collision returns two member names of one object within v that fold
// alike, and the path to that object, innermost segment first. It
// allocates only for the names that are not their own foldKey (one with
// an uppercase letter or beyond ASCII), and for the path of a collision.
func collision(v any) (a, b string, at []string, ok bool) {
	switch v := v.(type) {
	case map[string]any:
		var seen map[string]string // fold -> name, of the names that are not their own fold
		for k := range v {
			f := foldKey(k)
			if f == k {
				continue
			}
			if _, dup := v[f]; dup {
				return f, k, nil, true
			}
			if prev, dup := seen[f]; dup {
				return prev, k, nil, true
			}
			if seen == nil {
				seen = make(map[string]string)
			}
			seen[f] = k
		}
		for k, e := range v {
			if a, b, at, ok = collision(e); ok {
				return a, b, append(at, k), true
			}
		}
	case []any:
		for i, e := range v {
			if a, b, at, ok = collision(e); ok {
				return a, b, append(at, strconv.Itoa(i)), true
			}
		}
	}
	return "", "", nil, false
}

// quoteName quotes a member name, cut to maxQuotedName bytes.
func quoteName(s string) string {
	if len(s) > maxQuotedName {
		s = strings.ToValidUTF8(s[:maxQuotedName], "") + "…"
	}
	return strconv.Quote(s)
}

// pointer returns the JSON pointer (RFC 6901) of the path at, innermost
// segment first, cut to maxQuotedPointer bytes and quoted.
func pointer(at []string) string {
	var b strings.Builder
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	for i := len(at) - 1; i >= 0 && b.Len() <= maxQuotedPointer; i-- {
		b.WriteByte('/')
		b.WriteString(esc.Replace(at[i]))
	}
	s := b.String()
	if len(s) > maxQuotedPointer {
		s = strings.ToValidUTF8(s[:maxQuotedPointer], "") + "…"
	}
	return strconv.Quote(s)
}

// declared holds the property names a tool's input schema declares: at
// its root (properties, required), and in the allOf, anyOf, oneOf, if,
// then and else within it; $ref is not followed.
type declared struct {
	schema json.RawMessage     // the schema read, to tell a changed one
	exact  map[string]struct{} // the names
	folded map[string]string   // foldKey of a name -> the name
}

// declaredOf returns the property names schema declares.
func declaredOf(schema json.RawMessage) *declared {
	d := &declared{schema: schema, exact: map[string]struct{}{}, folded: map[string]string{}}
	d.read(schema, 0)
	return d
}

func (d *declared) read(raw json.RawMessage, depth int) {
	var s map[string]json.RawMessage // not a struct: its fields would match keys without regard to case
	if depth > maxSchemaNesting || json.Unmarshal(raw, &s) != nil {
		return
	}
	var props map[string]json.RawMessage
	var required []string
	_ = json.Unmarshal(s["properties"], &props)
	_ = json.Unmarshal(s["required"], &required)
	for name := range props {
		d.add(name)
	}
	for _, name := range required {
		d.add(name)
	}
	for _, kw := range [...]string{"allOf", "anyOf", "oneOf"} {
		var subs []json.RawMessage
		_ = json.Unmarshal(s[kw], &subs)
		for _, sub := range subs {
			d.read(sub, depth+1)
		}
	}
	for _, kw := range [...]string{"if", "then", "else"} {
		if sub, ok := s[kw]; ok {
			d.read(sub, depth+1)
		}
	}
}

func (d *declared) add(name string) {
	d.exact[name] = struct{}{}
	if f := foldKey(name); d.folded[f] == "" {
		d.folded[f] = name
	}
}

// schemaCache remembers the declared property names of each tool, by the
// *server.Tool the server hands [Set.ToolPolicy] (stable for a registered
// tool); an entry whose schema is not the tool's current one is read
// again. It is bounded, emptied when full.
type schemaCache struct {
	mu sync.Mutex
	m  map[*server.Tool]*declared
}

// of returns the declared property names of t's input schema.
func (c *schemaCache) of(t *server.Tool) *declared {
	c.mu.Lock()
	d, ok := c.m[t]
	c.mu.Unlock()
	if ok && sameBytes(d.schema, t.InputSchema) {
		return d
	}
	d = declaredOf(t.InputSchema)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= schemaCacheSize {
		c.m = make(map[*server.Tool]*declared)
	}
	c.m[t] = d
	return d
}

// sameBytes reports whether a and b are the same slice of memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
