package server

import (
	"encoding/json"
	"reflect"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// planSchemas are input schemas within the plan's subset.
var planSchemas = []string{
	`{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"description":"how long to wait"}},"required":["ms"],"additionalProperties":false}`,
	`{"type":"object","properties":{"text":{"type":"string","description":"the text to return"}},"required":["text"],"additionalProperties":false}`,
	`{"type":"object","properties":{"from":{"type":"integer","minimum":0,"maximum":100}},"required":["from"],"additionalProperties":false}`,
	`{"type":"object","properties":{"value":{"type":"number","exclusiveMinimum":-273.15,"exclusiveMaximum":1e6},"unit":{"type":"string","enum":["celsius","kelvin","é"]},"note":{"type":"string","minLength":2,"maxLength":4},"flag":{"type":"boolean"},"none":{"type":"null"},"tags":{"type":"array"},"opts":{"type":"object"},"any":{}},"required":["value","unit"]}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"number","maximum":10}},"additionalProperties":true}`,
	`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}`,
	`{"type":"object","properties":{"\ufffd":{"type":"integer"}}}`,
}

// planArguments are arguments to try against every schema: valid and not,
// with what the plan must leave to jsonschema-go (escapes, fractions
// written for integers, repeated members).
var planArguments = []string{
	`{}`, `{"ms":10}`, `{"ms":0}`, `{"ms":-1}`, `{"ms":1.0}`, `{"ms":1e2}`, `{"ms":"10"}`, `{"ms":10,"pad":"x"}`, `{"ms":null}`,
	`{"ms":10,"ms":-1}`, `{"ms":-1,"ms":10}`, `{"\u006ds":10}`, `{"ms":99999999999999999999999}`,
	`{"text":"hello"}`, `{"text":""}`, `{"text":"a\"b"}`, `{"text":7}`, `{"text":"x","other":1}`,
	`{"from":100}`, `{"from":101}`, `{"from":100.5}`, `{"from":-0}`,
	`{"value":-273.15,"unit":"kelvin"}`, `{"value":-273.14,"unit":"kelvin"}`, `{"value":1e6,"unit":"celsius"}`, `{"value":5,"unit":"\u00e9"}`,
	`{"value":5,"unit":"é"}`, `{"value":5,"unit":"fahrenheit"}`, `{"value":5,"unit":"kelvin","note":"ab"}`, `{"value":5,"unit":"kelvin","note":"a"}`,
	`{"value":5,"unit":"kelvin","note":"éééé"}`, `{"value":5,"unit":"kelvin","note":"ééééé"}`, `{"value":5,"unit":"kelvin","flag":true,"none":null,"tags":[1,"x"],"opts":{"a":[{}]},"any":"x"}`,
	`{"value":5,"unit":"kelvin","flag":1}`, `{"value":5,"unit":"kelvin","tags":{}}`, `{"value":5,"unit":"kelvin","opts":[]}`, `{"value":5,"unit":"kelvin","none":false}`,
	`{"n":10}`, `{"n":10.5}`, `{"n":-1e400}`, `{"n":"x","m":1}`, ` { "n" : 3 , "x" : [ ] } `, `[]`, `{"n":1`, `{"n":01}`, `{"":1e700}`, `{"x":[{"y":-1E+309}]}`, `{"n":1e-400}`, `{"s":"\\\"","n":1}`, "{\"\xff\":\"x\"}",
}

// The plan takes the common schemas (hand-written, and inferred from a
// struct of simple fields) and leaves the others to jsonschema-go.
func TestArgsPlanCoverage(t *testing.T) {
	for _, raw := range planSchemas {
		o, err := parseObjectSchema(json.RawMessage(raw))
		require.NoError(t, err, raw)
		assert.NotNil(t, o.plan, raw)
	}
	inferred, err := inferObjectSchema(reflect.TypeFor[struct {
		Text  string  `json:"text"`
		Times int     `json:"times,omitempty"`
		Scale float64 `json:"scale"`
		On    bool    `json:"on"`
	}]())
	require.NoError(t, err)
	assert.NotNil(t, inferred.plan, "%s", inferred.raw)
	for _, raw := range []string{
		`{"type":"object","properties":{"s":{"type":"string","pattern":"^a"}}}`,
		`{"type":"object","properties":{"s":{"type":["string","null"]}}}`,
		`{"type":"object","properties":{"s":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`,
		`{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"string"}}}}}`,
		`{"type":"object","properties":{"n":{"type":"integer","minimum":1,"exclusiveMinimum":0}}}`,
		`{"type":"object","properties":{"n":{"minimum":1}}}`,
		`{"type":"object","properties":{"e":{"type":"string","enum":["a",1]}}}`,
		`{"type":"object","required":["x"]}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}]}`,
		`{"type":"object","minProperties":1}`,
	} {
		o, err := parseObjectSchema(json.RawMessage(raw))
		require.NoError(t, err, raw)
		assert.Nil(t, o.plan, raw)
	}
}

// The plan only vouches: whatever it accepts, jsonschema-go accepts too.
// And it does accept the plain valid arguments, or it would be no fast
// path.
func TestArgsPlanOnlyVouches(t *testing.T) {
	for _, raw := range planSchemas {
		o, err := parseObjectSchema(json.RawMessage(raw))
		require.NoError(t, err)
		require.NotNil(t, o.plan, raw)
		for _, args := range planArguments {
			if o.plan.accepts([]byte(args)) {
				assert.NoError(t, o.validateJSON([]byte(args)), "the plan accepted %s against %s", args, raw)
			}
		}
	}
	o, err := parseObjectSchema(json.RawMessage(planSchemas[3]))
	require.NoError(t, err)
	for _, args := range []string{`{"value":-273.14,"unit":"kelvin"}`, `{"value":5,"unit":"é","note":"éééé"}`, `{"value":5,"unit":"kelvin","flag":true,"none":null,"tags":[1,"x"],"opts":{"a":[{}]},"any":"x"}`} {
		assert.True(t, o.plan.accepts([]byte(args)), args)
	}
}

// FuzzArgsPlan checks that the plan accepts nothing jsonschema-go refuses.
func FuzzArgsPlan(f *testing.F) {
	var schemas []*objectSchema
	for _, raw := range planSchemas {
		o, err := parseObjectSchema(json.RawMessage(raw))
		require.NoError(f, err)
		schemas = append(schemas, o)
	}
	for _, args := range planArguments {
		f.Add([]byte(args))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		for _, o := range schemas {
			if o.plan.accepts(args) {
				if err := o.validateJSON(args); err != nil {
					t.Fatalf("the plan accepted %s against %s: %v", args, o.raw, err)
				}
			}
		}
	})
}

// BenchmarkValidateArguments is the cost of validating typed echo's
// arguments alone: by the plan, and by the validator (decoding into
// values, then its walk), which the plan spares valid calls; and of
// refusing invalid ones, the text of the tool error included.
func BenchmarkValidateArguments(b *testing.B) {
	o, err := inferObjectSchema(reflect.TypeFor[struct {
		Text string `json:"text"`
	}]())
	require.NoError(b, err)
	require.NotNil(b, o.plan)
	args := []byte(`{"text":"hello"}`)
	b.Run("plan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := o.validateArguments(args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonschema", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := o.validateJSON(args); err != nil {
				b.Fatal(err)
			}
		}
	})
	invalid := []byte(`{"text":5}`)
	b.Run("refused", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			err := o.validateArguments(invalid)
			if err == nil {
				b.Fatal("accepted")
			}
			_ = invalidArguments("echo", err)
		}
	})
}

// BenchmarkParseObjectSchema is the cost of registering a tool's input
// schema (as a gateway does for each tool of its upstreams): compiling a
// small hand-written schema and a larger one with $defs and $ref, and the
// heap each compiled schema keeps.
func BenchmarkParseObjectSchema(b *testing.B) {
	for name, raw := range map[string]string{
		"small": `{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"description":"how long to wait"}},"required":["ms"],"additionalProperties":false}`,
		"large": `{"type":"object","properties":{"e":{"$ref":"#/$defs/expr"},"name":{"type":"string","maxLength":64,"pattern":"^[a-z]+$"},"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"uniqueItems":true},"when":{"type":"string","format":"date-time"},"limits":{"type":"object","properties":{"min":{"type":"number"},"max":{"type":"number"}},"required":["min","max"],"additionalProperties":false}},"required":["e","name"],"$defs":{"expr":{"anyOf":[{"type":"number"},{"type":"object","properties":{"op":{"enum":["+","-","*","/"]},"args":{"type":"array","items":{"$ref":"#/$defs/expr"},"maxItems":2}},"required":["op"],"additionalProperties":false}]}}}`,
	} {
		b.Run(name, func(b *testing.B) {
			const kept = 200
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			schemas := make([]*objectSchema, kept)
			for i := range schemas {
				o, err := parseObjectSchema(json.RawMessage(raw))
				require.NoError(b, err)
				schemas[i] = o
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(schemas)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parseObjectSchema(json.RawMessage(raw)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/kept, "kept-B/schema")
		})
	}
}
