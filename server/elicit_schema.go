package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// elicitSchema is a form-mode requestedSchema, as MCP restricts it: an
// object of primitive properties and the names of the required ones.
type elicitSchema struct {
	Schema     string                     `json:"$schema"`
	Type       string                     `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
}

// elicitProperty is one property of an elicitSchema: every keyword MCP
// allows a primitive, of which those of its type may be set.
type elicitProperty struct {
	Type        string       `json:"type"`
	Title       string       `json:"title"`
	Description string       `json:"description"`
	Format      string       `json:"format"`
	MinLength   *int         `json:"minLength"`
	MaxLength   *int         `json:"maxLength"`
	Minimum     *float64     `json:"minimum"`
	Maximum     *float64     `json:"maximum"`
	Enum        []string     `json:"enum"`
	EnumNames   []string     `json:"enumNames"`
	OneOf       []enumOption `json:"oneOf"`
	Items       *elicitItems `json:"items"`
	MinItems    *int         `json:"minItems"`
	MaxItems    *int         `json:"maxItems"`
	Default     any          `json:"default"`
}

// enumOption is a value of a titled enum and the title the client shows.
type enumOption struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// elicitItems are the choices of a multi select: untitled strings (Type
// "string" and Enum) or titled ones (AnyOf), not both.
type elicitItems struct {
	Type  string       `json:"type"`
	Enum  []string     `json:"enum"`
	AnyOf []enumOption `json:"anyOf"`
}

// checkElicitSchema checks that raw is a requestedSchema within MCP's
// restricted subset, naming the property and keyword at fault, and
// compiles it with the validator of tools' arguments, which checks the
// content of an accepted form.
func checkElicitSchema(raw json.RawMessage) (*objectSchema, error) {
	var s elicitSchema
	if err := decodeStrict(raw, &s); err != nil {
		return nil, fmt.Errorf("want an object with type, properties and required: %w", err)
	}
	if s.Type != "object" || s.Properties == nil {
		return nil, errors.New(`want "type": "object" and "properties"`)
	}
	for _, name := range s.Required {
		if _, ok := s.Properties[name]; !ok {
			return nil, fmt.Errorf("required property %q is not among the properties", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) { // the first fault by name
		body := s.Properties[name]
		var p elicitProperty
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		if err := p.check(); err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		// Strictly once the keywords are known to fit the type, so that a
		// nested object is named as such rather than as an unknown keyword.
		if err := decodeStrict(body, &p); err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
	}
	return parseObjectSchema(raw)
}

// decodeStrict decodes data into v, refusing the members v does not name.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// check reports a keyword p's type does not allow, or nil.
func (p *elicitProperty) check() error {
	isString := p.Type == "string"
	isNumber := p.Type == "number" || p.Type == "integer"
	switch {
	case !isString && !isNumber && p.Type != "boolean" && p.Type != "array":
		return fmt.Errorf("type %q: want string, number, integer, boolean or array (a form is flat)", p.Type)
	case !isString && (p.Format != "" || p.MinLength != nil || p.MaxLength != nil || p.Enum != nil || p.EnumNames != nil || p.OneOf != nil):
		return errors.New("format, minLength, maxLength, enum, enumNames and oneOf apply to strings only")
	case !isNumber && (p.Minimum != nil || p.Maximum != nil):
		return errors.New("minimum and maximum apply to numbers only")
	case p.Type != "array" && (p.Items != nil || p.MinItems != nil || p.MaxItems != nil):
		return errors.New("items, minItems and maxItems apply to arrays only")
	case p.Type == "array" && !p.Items.valid():
		return errors.New(`an array needs items {"type":"string","enum":[...]} or {"anyOf":[...]}`)
	case p.Enum != nil && p.OneOf != nil:
		return errors.New("enum and oneOf are exclusive")
	case p.EnumNames != nil && len(p.EnumNames) != len(p.Enum):
		return errors.New("enumNames needs one name per enum value")
	case !slices.Contains([]string{"", "email", "uri", "date", "date-time"}, p.Format):
		return fmt.Errorf("format %q: want email, uri, date or date-time", p.Format)
	}
	return nil
}

// valid reports whether it is a multi select's items: untitled strings or
// titled ones.
func (it *elicitItems) valid() bool {
	switch {
	case it == nil:
		return false
	case it.AnyOf != nil:
		return it.Type == "" && it.Enum == nil
	default:
		return it.Type == "string" && it.Enum != nil
	}
}
