package policy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFoldKeyIsEncodingJSONs: foldKey puts two names in one class exactly
// when encoding/json matches them. Over every rune, the key of a rune is
// a member of its SimpleFold orbit, the same for the whole orbit (so the
// classes are the orbits, which foldName's are too); for each letter with
// an orbit of its own, json.Unmarshal fills a field tagged with it from a
// member named with the next rune of the orbit, and strings.EqualFold
// agrees; the Kelvin sign and long s are spelt out.
func TestFoldKeyIsEncodingJSONs(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		key := foldKey(string(r))
		k, n := utf8.DecodeRuneInString(key)
		if n != len(key) {
			t.Fatalf("%U folds to %q, not one rune", r, key)
		}
		inOrbit := false
		for q := unicode.SimpleFold(r); ; q = unicode.SimpleFold(q) {
			inOrbit = inOrbit || q == k
			if foldKey(string(q)) != key {
				t.Fatalf("%U and %U, of one orbit, fold apart", r, q)
			}
			if q == r {
				break
			}
		}
		if !inOrbit {
			t.Fatalf("%U folds to %U, out of its orbit", r, k)
		}
	}
	matches := func(tag, member string) bool {
		typ := reflect.StructOf([]reflect.StructField{{Name: "F", Type: reflect.TypeFor[int](), Tag: reflect.StructTag(`json:"x` + tag + `"`)}})
		v := reflect.New(typ)
		require.NoError(t, json.Unmarshal([]byte(`{"x`+member+`":1}`), v.Interface()))
		return v.Elem().Field(0).Int() == 1
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if q := unicode.SimpleFold(r); q != r && unicode.IsLetter(r) && unicode.IsLetter(q) {
			require.True(t, matches(string(r), string(q)), "%U %U", r, q)
			require.True(t, strings.EqualFold(string(r), string(q)), "%U %U", r, q)
		}
	}
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"kind", "\u212Aind", true},
		{"K", "\u212A", true},
		{"less", "le\u017Fs", true},
		{"S", "\u017F", true},
		{"amount", "AMOUNT", true},
		{"amount", "amounts", false},
		{"ss", "\u00DF", false},
		{"i", "\u0131", false},
		{"\u03C3", "\u03C2", true},
		{"\u03A3", "\u03C2", true},
		{"\u00DF", "\u1E9E", true},
	} {
		assert.Equal(t, c.same, foldKey(c.a) == foldKey(c.b), "%q %q", c.a, c.b)
		assert.Equal(t, c.same, matches(c.a, c.b), "%q %q: encoding/json", c.a, c.b)
		assert.Equal(t, c.same, strings.EqualFold(c.a, c.b), "%q %q: strings.EqualFold", c.a, c.b)
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = foldKey("amount_2") }), "a name of lowercase ASCII is its own key")
}
