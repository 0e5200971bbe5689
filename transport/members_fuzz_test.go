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
		if !utf8.Valid(data) || !json.Valid(data) {
			return
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
