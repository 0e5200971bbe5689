package gateway

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// FuzzFixedArgumentSpellings holds the catalog's refusal of a fixed
// argument's spellings (toolCuration.fixedSpelling) to encoding/json's
// own matching: for a fixed name and a member the caller sends, decoded
// by encoding/json into a struct whose field is named fixed (as a Go
// upstream decodes its arguments), the call is refused -32602 exactly
// when encoding/json matches the member to that field; and the
// arguments a call that is let through sends upstream decode with the
// field holding the fixed value.
func FuzzFixedArgumentSpellings(f *testing.F) {
	for _, seed := range [][2]string{
		{"tenantId", "tenantid"},
		{"tenantId", "TENANTID"},
		{"tenantId", "tenantId"},
		{"tenantId", "tenant"},
		{"kind", "\u212aind"},      // the Kelvin sign folds to k
		{"skip", "\u017fkip"},      // long s folds to s
		{"KIND", "\u212aIND"},      // and to K
		{"stra\u00dfe", "STRASSE"}, // not a simple fold: no match
		{"stra\u00dfe", "stra\u1e9ee"},
		{"\u03a3x", "\u03c2x"}, // final sigma folds to capital sigma
		{"path", "pat\u0127"},
		{"a", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, fixed, key string) {
		field, ok := structNamed(fixed)
		if !ok {
			t.Skip("encoding/json does not take the name as a field's")
		}
		sent, err := json.Marshal(map[string]string{key: "victim"})
		require.NoError(t, err)
		matched := decodedField(t, field, sent) == `"victim"` // encoding/json's own matching

		tc := &toolCuration{fixed: map[string]json.RawMessage{fixed: json.RawMessage(`"acme"`)}}
		out, err := tc.arguments("t", sent)
		if err != nil {
			var rpcErr *server.Error
			require.ErrorAs(t, err, &rpcErr)
			require.Equal(t, protocol.CodeInvalidParams, rpcErr.Code)
			require.True(t, matched, "refused %+q beside %+q, which encoding/json does not match to it", key, fixed)
			return
		}
		require.False(t, matched, "let %+q through beside %+q, which encoding/json matches to it", key, fixed)
		require.Equal(t, `"acme"`, decodedField(t, field, out), "the fixed value reaches the upstream: %s", out)
	})
}

// TestFixedArgumentSpellingsEveryFold holds the refusal to encoding/json's
// matching as FuzzFixedArgumentSpellings does, for every rune that has a
// case fold: a name of that rune, and a member of each rune of its fold
// orbit (unicode.SimpleFold's) and of the runes beside it.
func TestFixedArgumentSpellingsEveryFold(t *testing.T) {
	folds := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.SimpleFold(r) == r || !utf8.ValidRune(r) {
			continue
		}
		fixed := "a" + string(r)
		field, ok := structNamed(fixed)
		if !ok {
			continue
		}
		tc := &toolCuration{fixed: map[string]json.RawMessage{fixed: json.RawMessage(`"acme"`)}}
		keys := []rune{r - 1, r + 1}
		for o := unicode.SimpleFold(r); o != r; o = unicode.SimpleFold(o) {
			keys = append(keys, o)
		}
		for _, k := range keys {
			for _, key := range []string{"a" + string(k), "A" + string(k)} {
				sent, err := json.Marshal(map[string]string{key: "victim"})
				require.NoError(t, err)
				matched := decodedField(t, field, sent) == `"victim"`
				out, err := tc.arguments("t", sent)
				require.Equal(t, matched, err != nil, "%+q beside the fixed %+q: encoding/json matches it: %v; refused: %v", key, fixed, matched, err)
				if err == nil {
					require.Equal(t, `"acme"`, decodedField(t, field, out))
				}
			}
		}
		folds++
	}
	require.Greater(t, folds, 1000, "the runes with a case fold")
}

// structNamed returns a struct type whose one field encoding/json names
// name; false when encoding/json does not take name as a field's name
// (an invalid tag).
func structNamed(name string) (reflect.Type, bool) {
	if name == "" {
		return nil, false
	}
	typ := reflect.StructOf([]reflect.StructField{{
		Name: "F",
		Type: reflect.TypeFor[json.RawMessage](),
		Tag:  reflect.StructTag(`json:"` + name + `"`),
	}})
	v := reflect.New(typ).Elem()
	v.Field(0).SetBytes([]byte(`1`))
	raw, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, false
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return nil, false
	}
	_, ok := members[name]
	return typ, ok && len(members) == 1
}

// decodedField decodes the object raw into a new value of the struct
// type typ and returns its field, as JSON.
func decodedField(t *testing.T, typ reflect.Type, raw []byte) string {
	t.Helper()
	v := reflect.New(typ)
	require.NoError(t, json.Unmarshal(raw, v.Interface()))
	return string(v.Elem().Field(0).Bytes())
}
