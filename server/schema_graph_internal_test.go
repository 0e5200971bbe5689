package server

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
)

// TestSchemaCycleRefused: a schema whose subschemas apply to the same
// value in a cycle is refused when it is compiled, with an error that
// names the cycle; jsonschema-go resolves each of them, and validating a
// value that reaches the cycle would overflow the stack (a fatal error,
// not a panic).
func TestSchemaCycleRefused(t *testing.T) {
	for name, raw := range map[string]string{
		"property ref to itself": `{"type":"object","properties":{"x":{"$ref":"#/properties/x"}},"required":["x"]}`,
		"allOf ref to the root":  `{"type":"object","allOf":[{"$ref":"#"}]}`,
		"defs a b a":             `{"type":"object","properties":{"x":{"$ref":"#/$defs/a"}},"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"}]},"b":{"oneOf":[{"type":"string"},{"$ref":"#/$defs/a"}]}}}`,
		"not":                    `{"type":"object","not":{"$ref":"#"}}`,
		"if then else":           `{"type":"object","properties":{"x":{"$defs":{"c":{"if":true,"then":{"$ref":"#/properties/x"}}},"else":{"$ref":"#/properties/x/$defs/c"}}}}`,
		"dependentSchemas":       `{"type":"object","dependentSchemas":{"a":{"$ref":"#"}}}`,
		"anchor":                 `{"type":"object","properties":{"x":{"$anchor":"here","allOf":[{"$ref":"#here"}]}}}`,
		"id":                     `{"type":"object","properties":{"x":{"$id":"https://example.com/x","allOf":[{"$ref":"https://example.com/x"}]}}}`,
		"relative id":            `{"$id":"https://example.com/root.json","type":"object","allOf":[{"$ref":"x.json"}],"$defs":{"x":{"$id":"x.json","$ref":"root.json"}}}`,
		"dynamicRef":             `{"type":"object","$dynamicAnchor":"node","properties":{"x":{"$dynamicRef":"#node"}},"allOf":[{"$dynamicRef":"#node"}]}`,
		"draft-07 definitions":   `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"x":{"$ref":"#/definitions/a"}},"definitions":{"a":{"allOf":[{"$ref":"#/definitions/a"}]}}}`,
		"escaped pointer":        `{"type":"object","$defs":{"a/b~c":{"allOf":[{"$ref":"#/$defs/a~1b~0c"}]}},"properties":{"x":{"$ref":"#/$defs/a~1b~0c"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var s jsonschema.Schema
			require.NoError(t, json.Unmarshal([]byte(raw), &s))
			_, err := s.Resolve(nil)
			require.NoError(t, err, "jsonschema-go resolves it")
			_, err = parseObjectSchema(json.RawMessage(raw))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "in a cycle")
			assert.Contains(t, err.Error(), "validation would never end")
		})
	}
}

// TestAddToolRefusesCyclicSchema: a tool whose input schema has a cycle
// that validation would never leave is refused when it is added, with an
// error that says why.
func TestAddToolRefusesCyclicSchema(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"x":{"$ref":"#/properties/x"}},"required":["x"]}`,
		`{"type":"object","allOf":[{"$ref":"#"}]}`,
	} {
		err := New().AddTool(Tool{Name: "t", InputSchema: json.RawMessage(schema)}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
			return Text("ran"), nil
		})
		require.Error(t, err, schema)
		assert.Contains(t, err.Error(), "validation would never end")
	}
}

// TestSchemaRecursion: schemas that refer back to themselves only through
// a keyword that descends into the value (properties, items...) are
// accepted and known to be recursive; those that do not, with references
// or without, are not.
func TestSchemaRecursion(t *testing.T) {
	for raw, recursive := range map[string]bool{
		treeSchema:        true,
		nestedArraySchema: true,
		`{"type":"object","properties":{"next":{"$ref":"#"}}}`:                                                               true,
		`{"type":"object","additionalProperties":{"$ref":"#"}}`:                                                              true,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/s"},"b":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`: false,
		`{"type":"object","allOf":[{"$ref":"#/$defs/o"}],"$defs":{"o":{"required":["a"]}}}`:                                  false,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{}}}}}}`:              false,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"x":{"$ref":"#"}}}`:              true,
		// draft-07 ignores what is beside a $ref: the items beside it are never applied.
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"x":{"$ref":"#/definitions/s","items":{"$ref":"#"}}},"definitions":{"s":{"type":"string"}}}`: false,
	} {
		o, err := parseObjectSchema(json.RawMessage(raw))
		require.NoError(t, err, raw)
		assert.Equal(t, recursive, o.recursive, raw)
	}
}

// TestSchemaGraphMatchesTheValidator runs the schema map over every schema
// of the JSON Schema Test Suite that jsonschema-go carries (draft 2020-12
// and draft-07), against the validator itself: each schema it resolves
// without a loader is mapped (every reference followed), and the valid and
// invalid values of each schema that is accepted validate as the suite
// says, so nothing the map accepts recurses without end.
func TestSchemaGraphMatchesTheValidator(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/google/jsonschema-go").Output()
	require.NoError(t, err)
	dir := filepath.Join(strings.TrimSpace(string(out)), "jsonschema", "testdata")
	var files []string
	for _, d := range []string{"draft2020-12", "draft7"} {
		f, err := filepath.Glob(filepath.Join(dir, d, "*.json"))
		require.NoError(t, err)
		files = append(files, f...)
	}
	require.NotEmpty(t, files)
	mapped, cases := 0, 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var groups []struct {
			Description string
			Schema      json.RawMessage
			Tests       []struct {
				Data  any
				Valid bool
			}
		}
		require.NoError(t, json.Unmarshal(data, &groups), file)
		for _, g := range groups {
			var s jsonschema.Schema
			if json.Unmarshal(g.Schema, &s) != nil {
				continue
			}
			if strings.Contains(file, "draft7") && s.Schema == "" {
				s.Schema = "http://json-schema.org/draft-07/schema#"
			}
			rs, err := s.Resolve(nil)
			if err != nil {
				continue // a remote reference, or a schema the validator refuses
			}
			raw, err := json.Marshal(&s)
			require.NoError(t, err)
			_, err = checkSchemaGraph(raw)
			require.NoError(t, err, "%s: %s: %s", filepath.Base(file), g.Description, raw)
			mapped++
			for _, tc := range g.Tests {
				assert.Equal(t, tc.Valid, rs.Validate(tc.Data) == nil, "%s: %s", filepath.Base(file), g.Description)
				cases++
			}
		}
	}
	t.Logf("%d schemas mapped, %d values validated", mapped, cases)
	assert.Greater(t, mapped, 500)
}

// treeSchema is the shape pydantic and zod.lazy give a tree: a node whose
// children are nodes.
const treeSchema = `{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`

// nestedArraySchema is arrays of arrays, to any depth.
const nestedArraySchema = `{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":["array","integer"],"items":{"$ref":"#/$defs/n"}}}}`

// treeChain is the arguments of treeSchema with a chain of n nodes under
// the root, the last one's name leaf.
func treeChain(n int, leaf string) []byte {
	var b strings.Builder
	b.WriteString(`{"root":`)
	for range n {
		b.WriteString(`{"name":"a","children":[`)
	}
	b.WriteString(`{"name":` + leaf + `}`)
	for range n {
		b.WriteString(`]}`)
	}
	b.WriteString(`}`)
	return []byte(b.String())
}

// nestedArrays is the arguments of nestedArraySchema, n arrays deep
// around leaf.
func nestedArrays(n int, leaf string) []byte {
	return []byte(`{"a":` + strings.Repeat("[", n) + leaf + strings.Repeat("]", n) + `}`)
}

// allocated returns the bytes f allocates (on this goroutine and any
// other, so nothing else may run).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDeepInvalidArgumentsBounded: an invalid value deep in a recursive
// schema costs a bounded allocation and a bounded error, however deep
// it is (jsonschema-go alone allocated 1.6 GiB for 81 KB of it), and a
// value at the bound is still validated, valid or not.
func TestDeepInvalidArgumentsBounded(t *testing.T) {
	tree, err := parseObjectSchema(json.RawMessage(treeSchema))
	require.NoError(t, err)
	arrays, err := parseObjectSchema(json.RawMessage(nestedArraySchema))
	require.NoError(t, err)
	const budget = 32 << 20
	for _, tc := range []struct {
		name  string
		o     *objectSchema
		args  []byte
		valid bool
	}{
		{"tree of 3,000, invalid leaf", tree, treeChain(3000, "1"), false},
		{"tree of 3,000, valid leaf", tree, treeChain(3000, `"z"`), false}, // too deep, valid or not
		{"tree at the bound, invalid leaf", tree, treeChain(maxValidatedNesting/2-1, "1"), false},
		{"tree at the bound, valid leaf", tree, treeChain(maxValidatedNesting/2-1, `"z"`), true},
		{"arrays of 3,200, invalid leaf", arrays, nestedArrays(3200, `"x"`), false},
		{"arrays at the bound, invalid leaf", arrays, nestedArrays(maxValidatedNesting-1, `"x"`), false},
		{"arrays at the bound, valid leaf", arrays, nestedArrays(maxValidatedNesting-1, `1`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res *CallToolResult
			n := allocated(func() {
				if err := tc.o.validateArguments(tc.args); err != nil {
					res = invalidArguments("t", err)
				}
			})
			t.Logf("%d bytes of arguments: %d bytes allocated", len(tc.args), n)
			assert.Less(t, n, uint64(budget))
			if tc.valid {
				assert.Nil(t, res)
				return
			}
			require.NotNil(t, res)
			text := res.Content[0].(*TextContent).Text
			assert.LessOrEqual(t, len(text), maxArgumentsErrorText, text)
		})
	}
}

// BenchmarkValidateDeepInvalid is the cost of refusing an invalid leaf
// deep in a tree: the 81 KB chain of 3,000 nodes (refused unread), and a
// chain at the bound on nesting (validated).
func BenchmarkValidateDeepInvalid(b *testing.B) {
	o, err := parseObjectSchema(json.RawMessage(treeSchema))
	require.NoError(b, err)
	for name, args := range map[string][]byte{
		"3000":  treeChain(3000, "1"),
		"bound": treeChain(maxValidatedNesting/2-1, "1"),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(args)))
			for b.Loop() {
				if o.validateArguments(args) == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}

// recursiveSchemas are the recursive shapes of tools' input schemas: a
// tree, arrays of arrays, a list, a map of maps, a tree by anyOf, and one
// in draft-07.
var recursiveSchemas = []string{
	treeSchema,
	nestedArraySchema,
	`{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#"}},"required":["v"]}`,
	`{"type":"object","additionalProperties":{"anyOf":[{"type":"string"},{"$ref":"#"}]}}`,
	`{"type":"object","properties":{"e":{"$ref":"#/$defs/expr"}},"$defs":{"expr":{"anyOf":[{"type":"number"},{"type":"object","properties":{"op":{"enum":["+","-"]},"args":{"type":"array","items":{"$ref":"#/$defs/expr"},"maxItems":2}},"required":["op"],"additionalProperties":false}]}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"$ref":"#/definitions/n"}},"definitions":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/definitions/n"}}}}}}`,
}

// FuzzRecursiveSchemas validates arguments against recursive schemas,
// against the validator: a schema (one of recursiveSchemas, picked by the
// first byte, or the fuzzer's own bytes) is compiled or refused, never
// crashes; arguments of any depth cost at most 32 MiB and an error of
// at most 512 bytes; and arguments within the bound on nesting get the
// validator's own verdict. Against the fuzzer's own schemas, which may
// branch at every level (anyOf of two references), arguments are kept 8
// levels deep.
func FuzzRecursiveSchemas(f *testing.F) {
	var compiled []*objectSchema
	for _, raw := range recursiveSchemas {
		o, err := parseObjectSchema(json.RawMessage(raw))
		require.NoError(f, err)
		require.True(f, o.recursive, raw)
		compiled = append(compiled, o)
	}
	for i := range recursiveSchemas {
		f.Add(uint8(i), []byte(nil), []byte(`{}`))
	}
	f.Add(uint8(0), []byte(nil), treeChain(3000, "1"))
	f.Add(uint8(0), []byte(nil), treeChain(maxValidatedNesting/2-1, "1"))
	f.Add(uint8(1), []byte(nil), nestedArrays(3200, `"x"`))
	f.Add(uint8(1), []byte(nil), nestedArrays(maxValidatedNesting-1, `"x"`))
	f.Add(uint8(2), []byte(nil), []byte(`{"v":1,"next":{"v":2,"next":{"v":"3"}}}`))
	f.Add(uint8(4), []byte(nil), []byte(`{"e":{"op":"+","args":[1,{"op":"-","args":[2,"x"]}]}}`))
	f.Add(uint8(255), []byte(`{"type":"object","properties":{"x":{"$ref":"#/properties/x"}},"required":["x"]}`), []byte(`{"x":1}`))
	f.Add(uint8(255), []byte(`{"type":"object","allOf":[{"$ref":"#"}]}`), []byte(`{"x":1}`))
	f.Add(uint8(255), []byte(`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"anyOf":[{"type":"array","items":{"$ref":"#/$defs/a"}},{"$ref":"#/$defs/b"}]},"b":{"not":{"$ref":"#/$defs/a"}}}}`), []byte(`{"a":[[[1]]]}`))
	f.Fuzz(func(t *testing.T, pick uint8, schema, args []byte) {
		var o *objectSchema
		if int(pick) < len(compiled) {
			o = compiled[pick]
		} else {
			var err error
			if o, err = parseObjectSchema(json.RawMessage(schema)); err != nil {
				return
			}
			if jsonscan.NestsDeeper(args, 8) {
				return
			}
		}
		var res *CallToolResult
		n := allocated(func() {
			if err := o.validateArguments(args); err != nil {
				res = invalidArguments("t", err)
			}
		})
		if n > 32<<20 {
			t.Fatalf("%d bytes allocated to validate %q against %s", n, args, o.raw)
		}
		if res != nil {
			if text := res.Content[0].(*TextContent).Text; len(text) > maxArgumentsErrorText {
				t.Fatalf("an error of %d bytes", len(text))
			}
		}
		var v any
		if json.Unmarshal(args, &v) != nil || jsonscan.NestsDeeper(args, maxValidatedNesting) {
			return
		}
		if want := o.validator.Validate(v) == nil; want != (res == nil) {
			t.Fatalf("validating %s against %s: the validator says valid=%v, the server %v", args, o.raw, want, res == nil)
		}
	})
}
