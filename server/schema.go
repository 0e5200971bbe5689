package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	schemavalidator "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
)

// objectSchema is a JSON Schema for a JSON object, compiled once: encoded
// for tools/list and compiled for validation (schema_validator.go). It is
// immutable and safe for concurrent use.
type objectSchema struct {
	raw       json.RawMessage
	validator *schemavalidator.Schema
	plan      *argsPlan // the fast path for arguments, when the schema allows one
	// recursive: validation descends as deep as the value nests, so a
	// value is validated only up to maxValidatedNesting (schema_graph.go).
	recursive bool
}

// trivial reports whether every object is valid: the schema only says
// "type": "object" (and annotations).
func (o *objectSchema) trivial() bool {
	return o.plan != nil && len(o.plan.props) == 0 && !o.plan.closed
}

// inferObjectSchema infers the schema of t's JSON form, which must be an
// object: t is a struct or a map with string (or text-marshaling) keys, or
// a pointer to one. The pointer's null is left out, since a tool's
// arguments and structured content are always objects.
func inferObjectSchema(t reflect.Type) (*objectSchema, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct && t.Kind() != reflect.Map {
		return nil, fmt.Errorf("%s is not a struct or map, so its JSON form is not an object", t)
	}
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil, err
	}
	if s.Type != "object" { // a struct that encodes otherwise, like time.Time
		raw, _ := json.Marshal(s)
		return nil, fmt.Errorf("%s does not encode as a JSON object: its schema is %s", t, raw)
	}
	return compileObjectSchema(s)
}

// parseObjectSchema compiles a schema given as JSON; tools/list shows raw
// as it is.
func parseObjectSchema(raw json.RawMessage) (*objectSchema, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %w", err)
	}
	o, err := compileObjectSchema(&s)
	if err != nil {
		return nil, err
	}
	o.raw = raw
	return o, nil
}

// compileObjectSchema checks that s describes objects, in a dialect the
// validator supports, and resolves it.
func compileObjectSchema(s *jsonschema.Schema) (*objectSchema, error) {
	if s.Type != "object" {
		return nil, errors.New(`schema must have "type": "object"`)
	}
	switch s.Schema {
	case "", "https://json-schema.org/draft/2020-12/schema",
		"http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#":
	default:
		return nil, fmt.Errorf("unsupported $schema %q: use draft 2020-12 (the default) or draft-07", s.Schema)
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %w", err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding JSON Schema: %w", err)
	}
	recursive, err := checkSchemaGraph(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %w", err)
	}
	validator, err := compileValidator(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %w", err)
	}
	return &objectSchema{raw: raw, validator: validator, plan: planArgs(raw), recursive: recursive}, nil
}

// validateArguments validates a tool call's arguments, a JSON object: the
// plan, when there is one, vouches for most valid arguments without
// decoding them; the validator decides the others.
func (o *objectSchema) validateArguments(data []byte) error {
	if o.plan != nil && o.plan.accepts(data) {
		return nil
	}
	return o.validateJSON(data)
}

// validateJSON validates a JSON document against the schema; against a
// recursive one, a document that nests deeper than maxValidatedNesting is
// refused unread.
func (o *objectSchema) validateJSON(data []byte) error {
	if o.recursive && jsonscan.NestsDeeper(data, maxValidatedNesting) {
		return errTooDeep
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if err := o.validator.Validate(v); err != nil {
		if ve, ok := errors.AsType[*schemavalidator.ValidationError](err); ok {
			return &schemaViolation{err: ve, value: v}
		}
		return err
	}
	return nil
}
