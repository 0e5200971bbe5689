package server

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// AddTypedTool registers a tool whose arguments are In and whose result is
// made from Out, replacing any tool of the same name, and tells initialized
// clients that the tool list changed. The input schema is t.InputSchema,
// else inferred from In ([jsonschema.For]: a struct or a map with string
// keys; struct{} for no arguments); arguments that fail validation against
// it or decoding into In are answered with a result with IsError set. h is
// called concurrently, once per tools/call; a returned [*Error] is answered
// as a protocol error, any other error as a result with IsError set and
// its text. The result is made from Out as the package doc details (a
// struct is the structuredContent and its text, *[CallToolResult] the
// result itself, a string one text item, anything else its JSON).
// Schemas are compiled once, here; AddTypedTool fails if they cannot be,
// for an invalid name or for a nil h. Like [Server.AddTool], it is safe to
// call while the server serves.
func AddTypedTool[In, Out any](s *Server, t Tool, h func(ctx context.Context, req *CallToolRequest, in In) (Out, error)) error {
	if !vocab.ValidToolName(t.Name) {
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
	return s.addTool(t, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		var args In // the arguments matched the input schema (see addTool)
		if err := json.Unmarshal(req.Arguments, &args); err != nil {
			return invalidArguments(req.Name, err), nil
		}
		res, err := h(ctx, req, args)
		if err != nil {
			return nil, err
		}
		return s.typedResult(ctx, req.Name, kind, out, res)
	}, in)
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
