package transport

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzSplitMembers checks the zero-copy splitter against encoding/json: for
// any valid JSON object, each member it reports must be byte-for-byte the
// raw value encoding/json finds under that exact name.
// splitMembers is the reference validMembers is held to: it splits a JSON
// object, already known to be valid JSON, into its members with the member
// scan of EachMember. Member names are matched exactly, as JSON-RPC
// requires; a name written with escapes is decoded first. Unknown members
// are skipped; for a repeated member the last one wins, as with
// encoding/json. ok is false when data is not an object.
func splitMembers(data []byte) (m members, ok bool) {
	i, ok := firstMember(data)
	for ok && i >= 0 {
		var key, val []byte
		key, val, i = nextMember(data, i)
		m.setDecoded(key, val)
	}
	return m, ok
}

func FuzzSplitMembers(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,{"b":"}"}]}}`,
		`{ "id" : "x\"y" , "result" : [ "]" , 2 ] , "other": {"id": 5} }`,
		`{"\u0069d":7,"id":8}`, `{}`, `{"ID":1}`, `{"error":{"code":-1,"message":"m"},"x":null}`,
		`{"params":true,"result":false,"error":null,"jsonrpc":1e5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return
		}
		// validMembers, which decodeMessage uses, is json.Valid and
		// splitMembers in one pass.
		vm, valid, isObject := validMembers(data)
		if valid != json.Valid(data) {
			t.Fatalf("validMembers says valid %v of %q, json.Valid %v", valid, data, !valid)
		}
		if !valid {
			return
		}
		if sm, ok := splitMembers(data); isObject != ok || (ok && !sameMembers(vm, sm)) {
			t.Fatalf("validMembers of %q: %q (object %v); splitMembers %q (object %v)", data, vm, isObject, sm, ok)
		}
		var want map[string]json.RawMessage
		if json.Unmarshal(data, &want) != nil || want == nil {
			if _, ok := splitMembers(data); ok && bytes.HasPrefix(trimJSONSpace(data), []byte("{")) {
				t.Fatalf("splitter accepted %q, which encoding/json does not decode as an object", data)
			}
			return
		}
		got, ok := splitMembers(data)
		if !ok {
			t.Fatalf("splitter rejected the object %q", data)
		}
		for name, val := range map[string][]byte{
			"jsonrpc": got.jsonrpc, "id": got.id, "method": got.method,
			"params": got.params, "result": got.result, "error": got.error,
		} {
			w, present := want[name]
			if present != (val != nil) || !bytes.Equal(w, val) {
				t.Fatalf("member %q of %q: splitter %q, encoding/json %q (present %v)", name, data, val, w, present)
			}
		}
	})
}

// sameMembers reports whether a and b hold the same members, the same
// sub-slices of one message (absent in both, or the same bytes).
func sameMembers(a, b members) bool {
	for _, pair := range [][2][]byte{{a.jsonrpc, b.jsonrpc}, {a.id, b.id}, {a.method, b.method}, {a.params, b.params}, {a.result, b.result}, {a.error, b.error}} {
		if (pair[0] == nil) != (pair[1] == nil) || !bytes.Equal(pair[0], pair[1]) {
			return false
		}
	}
	return true
}
