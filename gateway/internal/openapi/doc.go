// Package openapi turns an OpenAPI description into MCP tools and calls
// them over HTTP: the core of the gateway's REST upstreams (issue 89).
//
// [Load] parses an OpenAPI 3.0 or 3.1 description (JSON or YAML, with
// github.com/getkin/kin-openapi; Swagger 2.0 is refused with a message
// saying so) and builds one [Tool] per operation: its name from the
// operationId (see [Tool] for the rule when there is none), its input
// schema, a JSON Schema 2020-12 object, from the operation's parameters
// and JSON request body, its output schema from its JSON success response.
// External $refs are refused; local ones are inlined, with cycles and
// depth bounded.
//
// [API.Call] builds and sends one operation's request: to the operator's
// base URL only (never one taken from arguments), each path parameter
// inside its own segment, no header an argument may not set, redirects
// followed within the base URL's origin only, the answer bounded in bytes
// and time. It maps the answer to a [Result] a model can use.
//
// It is a leaf of the gateway: it imports internal/vocab and the standard
// library besides its parser and a YAML decoder, never the server or the
// gateway.
package openapi
