package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

// The member scan passes over eight bytes at a time where no quote,
// backslash or bracket is: every special byte is put at every offset of a
// word, and the values found must be encoding/json's.
func TestSplitObjectAtEveryOffset(t *testing.T) {
	specials := []string{`\"`, `\\`, `\\\"`, `{`, `}`, `[`, `]`, `[{"a":"}"}]`, `\u00e9`, "é", `\/`}
	for pad := range 17 {
		for _, sp := range specials {
			filler := strings.Repeat("x", pad)
			str := `"` + filler + strings.ReplaceAll(strings.ReplaceAll(sp, `{`, `\u007b`), `[`, `\u005b`) + filler + `"`
			if !json.Valid([]byte(str)) {
				str = `"` + filler + `\\` + filler + `"`
			}
			for _, val := range []string{
				str,
				`{"` + filler + `":` + str + `,"n":[1,` + str + `,{"d":{}}]}`,
				`[` + str + `,[[` + filler + `]],{"` + filler + `":"` + filler + `"}]`,
				`{"a":` + str + `}`,
			} {
				if !json.Valid([]byte(val)) {
					continue // a bracket of sp unbalanced outside a string
				}
				obj := `{"k` + filler + `":` + val + `,"after":` + str + `,"last":1}`
				var want map[string]json.RawMessage
				if err := json.Unmarshal([]byte(obj), &want); err != nil {
					t.Fatalf("%s: %v", obj, err)
				}
				got, ok := SplitObject([]byte(obj), "k"+filler, "after", "last")
				if !ok {
					t.Fatalf("%s: not an object", obj)
				}
				for i, k := range []string{"k" + filler, "after", "last"} {
					if string(got[i]) != string(want[k]) {
						t.Errorf("%s: member %q is %s, encoding/json reads %s", obj, k, got[i], want[k])
					}
				}
			}
		}
	}
}

// A member name written with escapes is decoded, whatever its length.
func TestSplitObjectEscapedNames(t *testing.T) {
	for pad := range 17 {
		name := strings.Repeat("n", pad)
		obj := `{"` + name + `\u0041` + name + `":1,"` + name + `\"q":2}`
		got, ok := SplitObject([]byte(obj), name+"A"+name, name+`"q`)
		if !ok || string(got[0]) != "1" || string(got[1]) != "2" {
			t.Errorf("%s: got %q, %v", obj, got, ok)
		}
	}
}

// Valid reads strings eight bytes at a time: a quote, backslash,
// escape or control character at every offset of a word is seen as
// json.Valid sees it.
func TestValidStringsAtEveryOffset(t *testing.T) {
	for pad := range 17 {
		filler := strings.Repeat("é", pad/2) + strings.Repeat("x", pad%2)
		for _, sp := range []string{`\"`, `\\`, `\n`, `\u00e9`, `\u00`, `\x`, "\x01", "\x1f", "\t", "\x7f", "\xff", ` `, `"`, `\`} {
			for _, doc := range []string{`"` + filler + sp + filler + `"`, `{"` + filler + sp + `":1}`, `["` + filler + `","` + sp + filler + `"]`} {
				if got, want := Valid([]byte(doc)), json.Valid([]byte(doc)); got != want {
					t.Errorf("%q: Valid %v, json.Valid %v", doc, got, want)
				}
			}
		}
	}
}
