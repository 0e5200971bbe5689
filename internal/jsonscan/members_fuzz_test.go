package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// member is a member of an object: its name, decoded, and its raw value.
type member struct{ key, val []byte }

// recorder is a Taker that keeps what it is given, level by level, each
// level's members since its last object started.
type recorder struct {
	levels [MaxPath + 1][]member
}

func (r *recorder) Object(level int) { r.levels[level] = r.levels[level][:0] }

func (r *recorder) Member(level int, key, val []byte) {
	r.levels[level] = append(r.levels[level], member{key, val})
}

// allMembers is the reference ValidTaking is held to: the members of an
// object already known to be valid JSON, found with EachMember; ok is
// false when data is not an object.
func allMembers(data []byte) (ms []member, ok bool) {
	ok = EachMember(data, func(key, val []byte) { ms = append(ms, member{key, val}) })
	return ms, ok
}

// last returns the value of the last member named key, nil when absent.
func last(ms []member, key string) []byte {
	var v []byte
	for _, m := range ms {
		if string(m.key) == key {
			v = m.val
		}
	}
	return v
}

// fuzzPath is the path FuzzSplitMembers takes: a JSON-RPC message's
// params and its _meta, as the codec does.
var fuzzPath = []string{"params", "_meta"}

// FuzzSplitMembers checks the member scans against encoding/json: for any
// input, ValidTaking is json.Valid; for a valid object, what it takes at
// each level along the path is, member for member, what EachMember finds
// in the object that is the last member of that level's name, and it
// takes a level exactly when that member is an object; and the last
// member of each name EachMember finds is byte for byte the raw value
// encoding/json reads under that exact name.
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
		`[{"params":{"_meta":{}}}]`, `{"params":{"_meta":{"a":1}},"params":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return
		}
		var rec recorder
		valid, taken := ValidTaking(data, &rec, fuzzPath...)
		if valid != json.Valid(data) {
			t.Fatalf("ValidTaking says valid %v of %q, json.Valid %v", valid, data, !valid)
		}
		if !valid {
			return
		}
		obj, isObject := allMembers(data)
		if isObject != (taken > 0) {
			t.Fatalf("ValidTaking of %q took %d levels; EachMember says object %v", data, taken, isObject)
		}
		if !isObject {
			return
		}
		checkLevels(t, data, &rec, obj, taken)
		checkAgainstEncodingJSON(t, data, obj)
	})
}

// checkLevels checks what ValidTaking took of data, level by level, and
// how many levels it says it took, against EachMember.
func checkLevels(t *testing.T, data []byte, rec *recorder, obj []member, taken int) {
	t.Helper()
	want := 1
	for level := 0; ; level++ {
		if !sameMembers(rec.levels[level], obj) {
			t.Fatalf("level %d of %q: ValidTaking gave %q, EachMember finds %q", level, data, rec.levels[level], obj)
		}
		if level == len(fuzzPath) {
			break
		}
		var ok bool
		if obj, ok = allMembers(last(obj, fuzzPath[level])); !ok {
			break
		}
		want++
	}
	if taken != want {
		t.Fatalf("ValidTaking of %q took %d levels, EachMember finds %d", data, taken, want)
	}
}

// checkAgainstEncodingJSON checks that the last member of each name of the
// object data is the raw value encoding/json reads under that name.
func checkAgainstEncodingJSON(t *testing.T, data []byte, obj []member) {
	t.Helper()
	var want map[string]json.RawMessage
	if json.Unmarshal(data, &want) != nil || want == nil {
		t.Fatalf("EachMember accepted %q, which encoding/json does not decode as an object", data)
	}
	names := make(map[string]bool, len(want))
	for _, m := range obj {
		names[string(m.key)] = true
	}
	if len(names) != len(want) {
		t.Fatalf("%q: EachMember finds %d names, encoding/json %d", data, len(names), len(want))
	}
	for name := range names {
		if got := last(obj, name); !bytes.Equal(got, want[name]) {
			t.Fatalf("member %q of %q: EachMember %q, encoding/json %q", name, data, got, want[name])
		}
	}
}

// sameMembers reports whether a and b hold the same members, in order.
func sameMembers(a, b []member) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].key, b[i].key) || !bytes.Equal(a[i].val, b[i].val) {
			return false
		}
	}
	return true
}
