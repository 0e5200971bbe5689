package server

import (
	"context"
	"fmt"
)

// maxArgumentsErrorText bounds the text of the tool error that refuses a
// call's arguments: the validator's message may quote the client's values,
// which are not echoed back beyond this.
const maxArgumentsErrorText = 512

// validatingArguments wraps the handler of a tool so that a call's
// arguments are validated against the tool's input schema before h runs:
// arguments that do not match are answered with a tool error that names
// where in them the failure is and the keyword that failed (built from the
// validator's result, see [schemaViolation]), and h is not called. Every path
// that runs a tool (a call, a task in either format, a deferred task)
// runs its registered handler, so each call is validated once. A schema
// that constrains nothing ({"type":"object"}) skips the work: callTool has
// already refused arguments that are not an object.
func validatingArguments(in *objectSchema, h ToolHandler) ToolHandler {
	if in.trivial() {
		return h
	}
	return func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		if err := in.validateArguments(req.Arguments); err != nil {
			return invalidArguments(req.Name, err), nil
		}
		return h(ctx, req)
	}
}

// invalidArguments is the tool error that refuses the arguments of a call
// of the named tool, marked so that telemetry tells it from the tool's own
// errors (see [Outcome.InvalidArguments]).
func invalidArguments(tool string, err error) *CallToolResult {
	text := fmt.Sprintf("invalid arguments for tool %q: %s", tool, err)
	if len(text) > maxArgumentsErrorText {
		text = truncateUTF8(text, maxArgumentsErrorText-len("…")) + "…"
	}
	r := toolError(text)
	r.invalidArgs = true
	return r
}

// InvalidArguments reports whether the result is the tool error that
// refused a tools/call's arguments because they do not match the tool's
// input schema (or, for a typed tool, do not decode into its input type):
// the tool's handler did not run. Such a result is also a [Outcome.ToolError].
func (o Outcome) InvalidArguments() bool {
	switch r := o.Result.(type) {
	case *CallToolResult:
		return r != nil && r.invalidArgs
	case CallToolResult:
		return r.invalidArgs
	}
	return false
}
