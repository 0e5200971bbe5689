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
		`{"params":{"name":"t","_meta":{"a":1,"\u0062":[{}],"a":"x"},"arguments":{"_meta":{}}}}`,
		`{"params":{"_meta":{"a":1,"b":2,"c":3,"d":4,"e":5}}}`,
		`{"params":{"_meta":{"a":1}},"params":{"_meta":7}}`,
		`{"params":{"_meta":{"a":1},"_meta":{"b":2}}}`,
		`{"params":{}}`, `{"params":{"_meta":{}}}`, `{"params": { "_meta" : { "a" : 1 } } }`,
		`{"params":{"_meta":{"a":1}},"p\u0061rams":{"x":{"_meta":{"b":2}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return
		}
		// validMembers, which decodeMessage uses, is json.Valid and
		// splitMembers in one pass.
		var vm members
		valid, isObject := validMembers(data, &vm, nil)
		if valid != json.Valid(data) {
			t.Fatalf("validMembers says valid %v of %q, json.Valid %v", valid, data, !valid)
		}
		if !valid {
			return
		}
		if sm, ok := splitMembers(data); isObject != ok || (ok && !sameMembers(vm, sm)) {
			t.Fatalf("validMembers of %q: %q (object %v); splitMembers %q (object %v)", data, vm, isObject, sm, ok)
		}
		checkParamsSplit(t, data, vm)
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

// checkParamsSplit checks what validMembers took of params and its _meta
// against splitParams and EachMember run on the members it found.
func checkParamsSplit(t *testing.T, data []byte, m members) {
	t.Helper()
	var top members
	var got paramsSplit
	validMembers(data, &top, &got)
	want := splitParams(m.params)
	if want.state != splitObject {
		if got.state != notSplit || got.meta.held {
			t.Fatalf("params of %q is not an object, yet validMembers split it: %+v", data, got)
		}
		return
	}
	if got.state != splitObject || !sameParams(got.members, want.members) {
		t.Fatalf("params of %q: validMembers %+v, splitParams %+v", data, got.members, want.members)
	}
	var all []rawMember
	metaObject := want.members.Meta != nil && EachMember(want.members.Meta, func(key, val []byte) {
		all = append(all, rawMember{key, val})
	})
	if wantHeld := metaObject && len(all) <= maxHeldMeta; got.meta.held != wantHeld {
		t.Fatalf("_meta of %q (%d members, object %v): held %v", data, len(all), metaObject, got.meta.held)
	}
	if !got.meta.held {
		return
	}
	held := got.meta.members[:got.meta.n]
	if len(held) != len(all) {
		t.Fatalf("_meta of %q: validMembers took %d members, EachMember finds %d", data, len(held), len(all))
	}
	for i := range all {
		if !bytes.Equal(held[i].key, all[i].key) || !bytes.Equal(held[i].val, all[i].val) {
			t.Fatalf("_meta of %q, member %d: validMembers %q: %q, EachMember %q: %q", data, i, held[i].key, held[i].val, all[i].key, all[i].val)
		}
	}
}

// sameParams reports whether a and b hold the same members of params.
func sameParams(a, b ParamMembers) bool {
	for _, pair := range [][2][]byte{{a.Name, b.Name}, {a.URI, b.URI}, {a.TaskID, b.TaskID}, {a.Meta, b.Meta}, {a.Arguments, b.Arguments}, {a.Task, b.Task}} {
		if (pair[0] == nil) != (pair[1] == nil) || !bytes.Equal(pair[0], pair[1]) {
			return false
		}
	}
	return a.Others == b.Others
}
