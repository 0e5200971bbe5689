package server

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TypedToolHandler runs a tool registered with [AddTypedTool]. in holds
// the arguments, already validated against the input schema and decoded.
// The result becomes the tool's result as AddTypedTool describes; a
// returned [*Error] is answered as a protocol error, and any other error
// becomes a result with IsError set and the error's text, as for a
// [ToolHandler]. It is called concurrently, once per tools/call.
type TypedToolHandler[In, Out any] func(ctx context.Context, req *CallToolRequest, in In) (Out, error)

// AddTypedTool registers a tool whose arguments are In and whose result is
// made from Out, replacing any tool of the same name, and tells initialized
// clients that the tool list changed. Schemas are inferred and compiled
// once, here; AddTypedTool fails if they cannot be, for an invalid name or
// for a nil handler.
//
// Input: unless t.InputSchema is set, the input schema is inferred from In
// with [jsonschema.For]: In must be a struct or a map with string keys (or
// a pointer to one); use struct{} for a tool without arguments. Struct
// fields are required unless tagged omitempty or omitzero, a `jsonschema`
// tag gives a field's description, and properties the struct lacks are
// refused. For constraints inference cannot express (enums, patterns,
// bounds), set t.InputSchema, an object schema; In may then also be an
// interface such as any (decoded as by [encoding/json]). Before the handler
// runs, the arguments are validated against the schema, then decoded into
// In; arguments that fail either step are answered with a result with
// IsError set whose text names the problem, as MCP asks, and the handler
// is not called.
//
// Output, by Out's type:
//   - a struct, or a pointer to one: the output schema is inferred from it
//     (or taken from t.OutputSchema) and declared; the returned value,
//     encoded, is the result's structuredContent and, as MCP recommends,
//     also its one text content item. A value that does not conform to the
//     schema (a nil pointer, a nil map in a field without omitempty, ...)
//     is a bug in the server: it is logged, with the cause, on the server's
//     logger, and the client gets a [protocol.CodeInternal] error.
//   - *[CallToolResult]: the handler makes the result itself. If
//     t.OutputSchema is set, the StructuredContent of a result without
//     IsError is validated against it as above.
//   - string: the result is one text item holding the string.
//   - anything else (any, maps, slices, numbers, ...): the result is one
//     text item holding the value encoded as JSON, without structured
//     content; t.OutputSchema must not be set.
//
// t's other fields (title, description, icons, annotations, execution,
// _meta) are listed as given. Like [Server.AddTool], AddTypedTool is safe
// to call while the server serves.
func AddTypedTool[In, Out any](s *Server, t Tool, h TypedToolHandler[In, Out]) error {
	if !ValidToolName(t.Name) {
		return toolNameError(t.Name)
	}
	if h == nil {
		return fmt.Errorf("mcp: tool %q: nil handler", t.Name)
	}
	in, err := typedInputSchema(reflect.TypeFor[In](), t.InputSchema)
	if err != nil {
		return fmt.Errorf("mcp: tool %q: input: %w", t.Name, err)
	}
	kind, out, err := typedOutputSchema(reflect.TypeFor[Out](), t.OutputSchema)
	if err != nil {
		return fmt.Errorf("mcp: tool %q: output: %w", t.Name, err)
	}
	t.InputSchema = in.raw
	if out != nil {
		t.OutputSchema = out.raw
	}
	return s.AddTool(t, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		if err := in.validateJSON(req.Arguments); err != nil {
			return toolError(fmt.Sprintf("invalid arguments for tool %q: %v", req.Name, err)), nil
		}
		var args In
		if err := json.Unmarshal(req.Arguments, &args); err != nil {
			return toolError(fmt.Sprintf("invalid arguments for tool %q: %v", req.Name, err)), nil
		}
		res, err := h(ctx, req, args)
		if err != nil {
			return nil, err
		}
		return s.typedResult(ctx, req.Name, kind, out, res)
	})
}

// outKind is how a typed tool's Out becomes its result.
type outKind uint8

const (
	outStructured outKind = iota // a struct: structuredContent plus text
	outResult                    // *CallToolResult: as returned
	outText                      // string: one text item
	outJSON                      // anything else: one text item of JSON
)

var callToolResultType = reflect.TypeFor[*CallToolResult]()

func typedInputSchema(t reflect.Type, explicit json.RawMessage) (*objectSchema, error) {
	if len(explicit) == 0 {
		return inferObjectSchema(t)
	}
	elem := t
	for elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	switch elem.Kind() {
	case reflect.Struct, reflect.Map, reflect.Interface:
	default:
		return nil, fmt.Errorf("%s cannot hold a JSON object: use a struct, a map or any", t)
	}
	return parseObjectSchema(explicit)
}

func typedOutputSchema(t reflect.Type, explicit json.RawMessage) (outKind, *objectSchema, error) {
	elem := t
	for elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	var kind outKind
	switch {
	case t == callToolResultType:
		kind = outResult
	case elem.Kind() == reflect.Struct:
		kind = outStructured
	case t.Kind() == reflect.String:
		kind = outText
	default:
		kind = outJSON
	}
	switch {
	case len(explicit) > 0 && (kind == outStructured || kind == outResult):
		out, err := parseObjectSchema(explicit)
		return kind, out, err
	case len(explicit) > 0:
		return kind, nil, fmt.Errorf("an output schema needs a struct or *CallToolResult result, not %s", t)
	case kind == outStructured:
		out, err := inferObjectSchema(t)
		return kind, out, err
	default:
		return kind, nil, nil
	}
}

// typedResult makes the result of a typed tool from the handler's value v.
func (s *Server) typedResult(ctx context.Context, name string, kind outKind, out *objectSchema, v any) (*CallToolResult, error) {
	switch kind {
	case outResult:
		res, _ := v.(*CallToolResult)
		if out != nil && (res == nil || !res.IsError) {
			var structured any
			if res != nil {
				structured = res.StructuredContent
			}
			if _, err := s.conforming(ctx, name, out, structured); err != nil {
				return nil, err
			}
		}
		return res, nil
	case outStructured:
		data, err := s.conforming(ctx, name, out, v)
		if err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{&TextContent{Text: string(data)}}, StructuredContent: json.RawMessage(data)}, nil
	case outText:
		return Text(reflect.ValueOf(v).String()), nil
	default:
		data, err := json.Marshal(v)
		if err != nil {
			return nil, s.toolBug(ctx, name, fmt.Errorf("encoding result: %w", err))
		}
		return Text(string(data)), nil
	}
}

// conforming encodes v and validates it against out; on failure it returns
// the error that reports the bug.
func (s *Server) conforming(ctx context.Context, name string, out *objectSchema, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, s.toolBug(ctx, name, fmt.Errorf("encoding structured content: %w", err))
	}
	if err := out.validateJSON(data); err != nil {
		return nil, s.toolBug(ctx, name, fmt.Errorf("structured content does not match the output schema: %w", err))
	}
	return data, nil
}

// toolBug logs a tool's invalid result and returns the internal error the
// client gets instead; the details stay in the log.
func (s *Server) toolBug(ctx context.Context, name string, err error) error {
	s.cfg.logger.ErrorContext(ctx, "invalid tool result", "tool", name, "error", err)
	return &Error{Code: protocol.CodeInternal, Message: "internal error", err: fmt.Errorf("tool %q: %w", name, err)}
}

// toolError is a tool execution error: a result with IsError set.
func toolError(text string) *CallToolResult {
	return &CallToolResult{Content: []Content{&TextContent{Text: text}}, IsError: true}
}
