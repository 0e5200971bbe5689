package server

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	schemavalidator "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// maxQuotedValue bounds the JSON of a value a violation quotes, so that a
// long value leaves room for the rule it broke.
const maxQuotedValue = 64

// schemaViolation is a value's failure to match a schema: the validator's
// structured result, with the value validated, so that the failing part
// of it can be quoted. Its text names where in the value the failure is
// (a JSON Pointer, left out at the root), the keyword that failed, and
// what the keyword wanted, from the result's fields, never its wording:
// `/where/lat: type: "north" has type "string", want "number"`.
type schemaViolation struct {
	err   *schemavalidator.ValidationError
	value any
}

func (v *schemaViolation) Error() string {
	e := innermostViolation(v.err)
	var b strings.Builder
	if len(e.InstanceLocation) > 0 {
		for _, tok := range e.InstanceLocation {
			b.WriteByte('/')
			for _, r := range tok { // escaped as RFC 6901 has it
				switch r {
				case '~':
					b.WriteString("~0")
				case '/':
					b.WriteString("~1")
				default:
					b.WriteRune(r)
				}
			}
		}
		b.WriteString(": ")
	}
	b.WriteString(violationKeyword(e.ErrorKind))
	b.WriteString(": ")
	b.WriteString(violationDetail(e, valueAt(v.value, e.InstanceLocation)))
	return b.String()
}

// innermostViolation follows e's causes through the results that only
// group others (the root, a $ref, allOf, a subschema) to the failure
// itself. Of several causes it follows the one whose instance location
// sorts first, so that the text does not change with the order in which
// the validator visited an object's members.
func innermostViolation(e *schemavalidator.ValidationError) *schemavalidator.ValidationError {
	for len(e.Causes) > 0 {
		switch e.ErrorKind.(type) {
		case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		default:
			return e
		}
		e = slices.MinFunc(e.Causes, func(a, b *schemavalidator.ValidationError) int {
			return slices.Compare(a.InstanceLocation, b.InstanceLocation)
		})
	}
	return e
}

// violationKeyword is the keyword that failed: the first of its keyword
// path, or, for the kinds whose path the validator leaves empty, their own.
func violationKeyword(k schemavalidator.ErrorKind) string {
	if kp := k.KeywordPath(); len(kp) > 0 {
		return kp[0]
	}
	switch k.(type) {
	case *kind.Not:
		return "not"
	case *kind.FalseSchema:
		return "false"
	case *kind.RefCycle:
		return "$ref"
	}
	return "schema"
}

// violationDetail says what e's keyword wanted and what the value, got,
// has instead.
func violationDetail(e *schemavalidator.ValidationError, got any) string {
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		if len(k.Want) == 1 {
			return fmt.Sprintf("%s has type %q, want %q", quoteValue(got), k.Got, k.Want[0])
		}
		return fmt.Sprintf("%s has type %q, want one of %s", quoteValue(got), k.Got, quoteStrings(k.Want))
	case *kind.Enum:
		return fmt.Sprintf("%s is not one of %s", quoteValue(got), quoteValue(k.Want))
	case *kind.Const:
		return fmt.Sprintf("%s is not %s", quoteValue(got), quoteValue(k.Want))
	case *kind.Format:
		return fmt.Sprintf("%s is not a valid %q", quoteValue(got), k.Want)
	case *kind.Required:
		return "missing " + plural(len(k.Missing), "property", "properties") + " " + quoteStrings(k.Missing)
	case *kind.DependentRequired:
		return fmt.Sprintf("property %q requires %s", k.Prop, quoteStrings(k.Missing))
	case *kind.Dependency:
		return fmt.Sprintf("property %q requires %s", k.Prop, quoteStrings(k.Missing))
	case *kind.AdditionalProperties:
		// sorted: the validator lists them in the order it met them, a map's
		return "unexpected " + plural(len(k.Properties), "property", "properties") + " " + quoteStrings(slices.Sorted(slices.Values(k.Properties)))
	case *kind.PropertyNames:
		return fmt.Sprintf("property name %s is not allowed", quoteValue(k.Property))
	case *kind.MinProperties:
		return fmt.Sprintf("the object has %d properties, fewer than %d", k.Got, k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("the object has %d properties, more than %d", k.Got, k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("the array has %d items, fewer than %d", k.Got, k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("the array has %d items, more than %d", k.Got, k.Want)
	case *kind.AdditionalItems:
		return fmt.Sprintf("the last %d items are not allowed", k.Count)
	case *kind.UniqueItems:
		return fmt.Sprintf("items %d and %d are equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains:
		return "no item matches"
	case *kind.MinContains:
		return fmt.Sprintf("%d items match, fewer than %d", len(k.Got), k.Want)
	case *kind.MaxContains:
		return fmt.Sprintf("%d items match, more than %d", len(k.Got), k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("%s has %d characters, fewer than %d", quoteValue(got), k.Got, k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("%s has %d characters, more than %d", quoteValue(got), k.Got, k.Want)
	case *kind.Pattern:
		return fmt.Sprintf("%s does not match %s", quoteValue(got), quoteValue(k.Want))
	case *kind.Minimum:
		return fmt.Sprintf("%s is less than %s", ratString(k.Got), ratString(k.Want))
	case *kind.Maximum:
		return fmt.Sprintf("%s is greater than %s", ratString(k.Got), ratString(k.Want))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("%s is not greater than %s", ratString(k.Got), ratString(k.Want))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("%s is not less than %s", ratString(k.Got), ratString(k.Want))
	case *kind.MultipleOf:
		return fmt.Sprintf("%s is not a multiple of %s", ratString(k.Got), ratString(k.Want))
	case *kind.Not:
		return fmt.Sprintf("%s matches the schema it must not", quoteValue(got))
	case *kind.AnyOf:
		return fmt.Sprintf("%s matches none of the %d alternatives", quoteValue(got), len(e.Causes))
	case *kind.OneOf:
		if len(k.Subschemas) > 1 {
			return fmt.Sprintf("%s matches alternatives %d and %d, want exactly one", quoteValue(got), k.Subschemas[0], k.Subschemas[1])
		}
		return fmt.Sprintf("%s matches none of the %d alternatives", quoteValue(got), len(e.Causes))
	case *kind.FalseSchema:
		return "no value is allowed here"
	case *kind.RefCycle:
		return "the schema applies itself to the value without end"
	}
	return fmt.Sprintf("%s does not match", quoteValue(got))
}

// valueAt is the part of v at the instance location loc, or nil when v
// has none there.
func valueAt(v any, loc []string) any {
	for _, tok := range loc {
		switch c := v.(type) {
		case map[string]any:
			v = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

// quoteValue is v's JSON, cut to maxQuotedValue bytes.
func quoteValue(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	if len(data) > maxQuotedValue {
		return truncateUTF8(string(data), maxQuotedValue-len("…")) + "…"
	}
	return string(data)
}

// quoteStrings is names quoted and joined by commas.
func quoteStrings(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoteValue(n)
	}
	return strings.Join(q, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ratString is r as JSON writes a number: an integer as one, a fraction
// as its shortest decimal.
func ratString(r *big.Rat) string {
	if r == nil {
		return "null"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}
