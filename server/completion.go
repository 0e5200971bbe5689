package server

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// maxCompletionValues is the most values one completion/complete result
// holds; a completer's further values are counted in total and flagged
// with hasMore.
const maxCompletionValues = 100

// CompleteFunc suggests values for one prompt argument (see
// [PromptArgument].Complete) or one resource template variable (see
// [ResourceTemplate].Complete). It returns every candidate, best first:
// the server sends the first [maxCompletionValues] of them, with the total
// count. A returned [*Error] is answered as it is; any other error is
// answered as [protocol.CodeInternal]. It runs concurrently, one goroutine per
// request.
type CompleteFunc func(ctx context.Context, req *CompleteRequest) ([]string, error)

// CompleteRequest is what a [CompleteFunc] receives.
type CompleteRequest struct {
	Request *Request      // the underlying request (session, id, ...)
	Ref     CompletionRef // the prompt or resource template
	// Argument is the name of the argument (or template variable) being
	// completed, and Value what the user typed of it so far.
	Argument string
	Value    string
	// Context holds the values of the other arguments already resolved
	// (params.context.arguments); never nil.
	Context map[string]string
}

// CompletionRef is what a completion refers to: a prompt (Type
// "ref/prompt" with Name) or a resource template (Type "ref/resource" with
// URI, the template's uriTemplate).
type CompletionRef struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// registerCompletion registers completion/complete.
func (s *Server) registerCompletion() {
	s.handle("completion/complete", s.complete)
}

// hasCompleters reports whether a prompt argument or a template variable
// has a completer: then completions are declared.
func (s *Server) hasCompleters() bool {
	return s.prompts.hasCompleters() || s.resources.hasCompleters()
}

type completeParams struct {
	Ref      *CompletionRef `json:"ref"`
	Argument *struct {
		Name  string  `json:"name"`
		Value *string `json:"value"`
	} `json:"argument"`
	Context *struct {
		Arguments json.RawMessage `json:"arguments"`
	} `json:"context"`
}

type completeResult struct {
	Completion completion `json:"completion"`
}

type completion struct {
	Values  []string `json:"values"`
	Total   int      `json:"total"`
	HasMore bool     `json:"hasMore"`
}

func (s *Server) complete(ctx context.Context, req *Request) (any, error) {
	req.maxResult = resultBound(s.cfg.maxResultBytes)
	var p completeParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, Errorf(protocol.CodeInvalidParams, "invalid completion/complete params: %v", err)
	}
	if p.Ref == nil || p.Argument == nil || p.Argument.Name == "" || p.Argument.Value == nil {
		return nil, Errorf(protocol.CodeInvalidParams, "completion/complete: ref, argument.name and argument.value are required")
	}
	creq := &CompleteRequest{Request: req, Ref: *p.Ref, Argument: p.Argument.Name, Value: *p.Argument.Value, Context: map[string]string{}}
	if p.Context != nil {
		args, err := stringArguments(req.Method, p.Context.Arguments)
		if err != nil {
			return nil, err
		}
		creq.Context = args
	}
	f, err := s.completer(req, p.Ref, p.Argument.Name)
	if err != nil {
		return nil, err
	}
	var values []string
	if f != nil {
		if values, err = f(ctx, creq); err != nil {
			return nil, err
		}
	}
	total := len(values)
	values = slices.Clip(values[:min(total, maxCompletionValues)])
	if values == nil {
		values = []string{}
	}
	return completeResult{completion{Values: values, Total: total, HasMore: total > maxCompletionValues}}, nil
}

// completer finds the completer of argument in ref: nil when the argument
// exists but has none, an error when the prompt, template or argument does
// not exist, or the item view hides the prompt or template from req.
func (s *Server) completer(req *Request, ref *CompletionRef, argument string) (CompleteFunc, error) {
	switch ref.Type {
	case "ref/prompt":
		rp := s.prompts.lookup(ref.Name)
		if rp == nil || !s.itemShown(req, ItemPrompt, ref.Name) {
			return nil, Errorf(protocol.CodeInvalidParams, "completion/complete: unknown prompt: %q", ref.Name)
		}
		i := slices.IndexFunc(rp.prompt.Arguments, func(a PromptArgument) bool { return a.Name == argument })
		if i < 0 {
			return nil, Errorf(protocol.CodeInvalidParams, "completion/complete: prompt %q has no argument %q", ref.Name, argument)
		}
		return rp.prompt.Arguments[i].Complete, nil
	case "ref/resource":
		rt := s.resources.template(ref.URI)
		if rt == nil || !s.itemShown(req, ItemResourceTemplate, ref.URI) {
			return nil, Errorf(protocol.CodeInvalidParams, "completion/complete: unknown resource template: %q", ref.URI)
		}
		if !slices.Contains(rt.compiled.Varnames(), argument) {
			return nil, Errorf(protocol.CodeInvalidParams, "completion/complete: resource template %q has no variable %q", ref.URI, argument)
		}
		return rt.tmpl.Complete[argument], nil
	default:
		return nil, Errorf(protocol.CodeInvalidParams, "completion/complete: unknown ref type %q", ref.Type)
	}
}
