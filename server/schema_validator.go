package server

import (
	"bytes"
	"errors"
	"fmt"

	schemavalidator "github.com/santhosh-tekuri/jsonschema/v6"
)

// Arguments and structured content are validated by
// santhosh-tekuri/jsonschema, not jsonschema-go (which infers schemas
// from Go types): its errors say where in the value a keyword failed
// (kind, instance location, causes) where jsonschema-go's are only text,
// and the text of a refusal is built from them (schema_violation.go).

// schemaURL names a tool's schema while it compiles; nothing is fetched
// from it, and a reference resolved against it stays inside the schema.
const schemaURL = "urn:vigil:schema"

// noLoader refuses to load any schema: a tool's schema is whole, and a
// reference outside it (a file, a URL) is an error, not a fetch.
type noLoader struct{}

func (noLoader) Load(string) (any, error) {
	return nil, errors.New("the schema refers outside itself; only references within it are followed")
}

// compileValidator compiles raw, the encoded schema, for the validator:
// draft 2020-12 unless $schema says draft-07, no loading, formats as
// annotations. A schema that breaks the meta-schema of its draft (which
// jsonschema-go's check lets through: "type": "strin", a required member
// listed twice) is refused, with the failing keyword named.
func compileValidator(raw []byte) (*schemavalidator.Schema, error) {
	doc, err := schemavalidator.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := schemavalidator.NewCompiler()
	c.DefaultDraft(schemavalidator.Draft2020)
	c.UseLoader(noLoader{})
	// The formats the validator asserts in draft-07 (in 2020-12 it asserts
	// none) are annotations here, so that "format" constrains nothing in
	// either draft, as with jsonschema-go before: a tool's upstream stays
	// the judge of its formats.
	for _, name := range []string{
		"json-pointer", "relative-json-pointer", "uuid", "duration", "period", "ipv4", "ipv6", "hostname",
		"email", "idn-email", "date", "time", "date-time", "uri", "iri", "uri-reference", "iri-reference",
		"uri-template", "semver", "idn-hostname",
	} {
		c.RegisterFormat(&schemavalidator.Format{Name: name, Validate: func(any) error { return nil }})
	}
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(schemaURL)
	if sve, ok := errors.AsType[*schemavalidator.SchemaValidationError](err); ok {
		if ve, ok := errors.AsType[*schemavalidator.ValidationError](sve.Err); ok {
			return nil, fmt.Errorf("it breaks the JSON Schema meta-schema: %w", &schemaViolation{err: ve, value: doc})
		}
	}
	return s, err
}
