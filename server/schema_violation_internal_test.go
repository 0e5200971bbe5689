package server

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSchemaViolationText: the text that refuses arguments is built from
// the validator's structured result, for each kind of failure: it starts
// with the failing member's JSON Pointer, which is the result's instance
// location, and the keyword, which is the result's keyword, then says
// what the keyword wanted from the result's fields.
func TestSchemaViolationText(t *testing.T) {
	for _, tc := range []struct {
		name, schema, args string
		loc                []string // the innermost result's instance location
		keyword            string
		want               string
	}{
		{
			"missing required", `{"type":"object","properties":{"ms":{"type":"integer"}},"required":["ms"]}`, `{}`,
			[]string{},
			"required", `required: missing property "ms"`,
		},
		{
			"missing required, nested", `{"type":"object","properties":{"where":{"type":"object","required":["lat","lon"]}}}`, `{"where":{}}`,
			[]string{"where"},
			"required", `/where: required: missing properties "lat", "lon"`,
		},
		{
			"wrong type", `{"type":"object","properties":{"ms":{"type":"integer"}}}`, `{"ms":"10"}`,
			[]string{"ms"},
			"type", `/ms: type: "10" has type "string", want "integer"`,
		},
		{
			"wrong type of several", `{"type":"object","properties":{"v":{"type":["string","null"]}}}`, `{"v":5}`,
			[]string{"v"},
			"type", `/v: type: 5 has type "number", want one of "null", "string"`,
		},
		{
			"enum", `{"type":"object","properties":{"unit":{"enum":["C","F"]}}}`, `{"unit":"K"}`,
			[]string{"unit"},
			"enum", `/unit: enum: "K" is not one of ["C","F"]`,
		},
		{
			"const", `{"type":"object","properties":{"v":{"const":{"a":1}}}}`, `{"v":{"a":2}}`,
			[]string{"v"},
			"const", `/v: const: {"a":2} is not {"a":1}`,
		},
		{
			"minimum", `{"type":"object","properties":{"ms":{"type":"integer","minimum":0}}}`, `{"ms":-1}`,
			[]string{"ms"},
			"minimum", `/ms: minimum: -1 is less than 0`,
		},
		{
			"exclusiveMaximum", `{"type":"object","properties":{"r":{"exclusiveMaximum":2.5}}}`, `{"r":2.5}`,
			[]string{"r"},
			"exclusiveMaximum", `/r: exclusiveMaximum: 2.5 is not less than 2.5`,
		},
		{
			"multipleOf", `{"type":"object","properties":{"n":{"multipleOf":3}}}`, `{"n":7}`,
			[]string{"n"},
			"multipleOf", `/n: multipleOf: 7 is not a multiple of 3`,
		},
		{
			"additionalProperties", `{"type":"object","properties":{"ms":{}},"additionalProperties":false}`, `{"ms":1,"b":2,"a":3}`,
			[]string{},
			"additionalProperties", `additionalProperties: unexpected properties "a", "b"`,
		},
		{
			"an item, by index", `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}}}}`, `{"tags":["a",3]}`,
			[]string{"tags", "1"},
			"type", `/tags/1: type: 3 has type "number", want "string"`,
		},
		{
			"a member with / and ~ in its name", `{"type":"object","properties":{"a/b~":{"maxLength":2}}}`, `{"a/b~":"yyy"}`,
			[]string{"a/b~"},
			"maxLength", `/a~1b~0: maxLength: "yyy" has 3 characters, more than 2`,
		},
		{
			"pattern", `{"type":"object","properties":{"code":{"pattern":"^[A-Z]+$"}}}`, `{"code":"x1"}`,
			[]string{"code"},
			"pattern", `/code: pattern: "x1" does not match "^[A-Z]+$"`,
		},
		{
			"minItems", `{"type":"object","properties":{"t":{"minItems":2}}}`, `{"t":[1]}`,
			[]string{"t"},
			"minItems", `/t: minItems: the array has 1 items, fewer than 2`,
		},
		{
			"uniqueItems", `{"type":"object","properties":{"t":{"uniqueItems":true}}}`, `{"t":[1,2,1]}`,
			[]string{"t"},
			"uniqueItems", `/t: uniqueItems: items 0 and 2 are equal`,
		},
		{
			"anyOf", `{"type":"object","properties":{"alt":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`, `{"alt":1.5}`,
			[]string{"alt"},
			"anyOf", `/alt: anyOf: 1.5 matches none of the 2 alternatives`,
		},
		{
			"oneOf", `{"type":"object","properties":{"t":{"oneOf":[{"type":"integer"},{"minimum":0}]}}}`, `{"t":1}`,
			[]string{"t"},
			"oneOf", `/t: oneOf: 1 matches alternatives 0 and 1, want exactly one`,
		},
		{
			"not", `{"type":"object","properties":{"t":{"not":{"const":3}}}}`, `{"t":3}`,
			[]string{"t"},
			"not", `/t: not: 3 matches the schema it must not`,
		},
		{
			"false", `{"type":"object","properties":{"x":false}}`, `{"x":1}`,
			[]string{"x"},
			"false", `/x: false: no value is allowed here`,
		},
		{
			"dependentRequired", `{"type":"object","dependentRequired":{"card":["cvv"]}}`, `{"card":"4111"}`,
			[]string{},
			"dependentRequired", `dependentRequired: property "card" requires "cvv"`,
		},
		{
			"through $ref, deep", treeSchema, `{"root":{"name":"a","children":[{"name":"b","children":[{"name":7}]}]}}`,
			[]string{"root", "children", "0", "children", "0", "name"},
			"type", `/root/children/0/children/0/name: type: 7 has type "number", want "string"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseObjectSchema(json.RawMessage(tc.schema))
			require.NoError(t, err)
			err = o.validateArguments([]byte(tc.args))
			v, ok := errors.AsType[*schemaViolation](err)
			require.True(t, ok, "%v", err)
			e := innermostViolation(v.err)
			assert.Equal(t, tc.loc, e.InstanceLocation)
			assert.Equal(t, tc.keyword, violationKeyword(e.ErrorKind))
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// TestSchemaViolationStable: of several failures, the text names the one
// whose member sorts first, and lists unexpected members sorted, however
// the validator's walk of an object's members happened to order them.
func TestSchemaViolationStable(t *testing.T) {
	o, err := parseObjectSchema(json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"},"z":{"type":"integer"}},"patternProperties":{"^p":{"type":"integer"}}}`))
	require.NoError(t, err)
	closed, err := parseObjectSchema(json.RawMessage(`{"type":"object","additionalProperties":false}`))
	require.NoError(t, err)
	for range 50 {
		require.EqualError(t, o.validateArguments([]byte(`{"z":"c","y":"b","x":"a","p1":"d"}`)), `/p1: type: "d" has type "string", want "integer"`)
		require.EqualError(t, closed.validateArguments([]byte(`{"d":1,"c":1,"b":1,"a":1}`)), `additionalProperties: unexpected properties "a", "b", "c", "d"`)
	}
}

// TestFormatIsAnAnnotation: "format" constrains nothing, in draft 2020-12
// (as the validator has it) and in draft-07 (where it would assert it), as
// with jsonschema-go before.
func TestFormatIsAnAnnotation(t *testing.T) {
	for _, dialect := range []string{"", `"$schema":"http://json-schema.org/draft-07/schema#",`} {
		o, err := parseObjectSchema(json.RawMessage(`{` + dialect + `"type":"object","properties":{"e":{"type":"string","format":"email"},"d":{"format":"date-time"},"u":{"format":"uri"}}}`))
		require.NoError(t, err)
		assert.NoError(t, o.validateJSON([]byte(`{"e":"nope","d":"yesterday","u":"::"}`)), dialect)
	}
}
