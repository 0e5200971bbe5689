package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// ErrUnknownTool is the error of [API.Call] for a name that is not one of
// the API's tools.
var ErrUnknownTool = errors.New("openapi: unknown tool")

// ErrArguments wraps each error of [API.Call] about its arguments: the
// caller's mistake, for a JSON-RPC invalid-params answer.
var ErrArguments = errors.New("openapi: invalid arguments")

// maxRedirects bounds the redirects a call follows.
const maxRedirects = 10

// A Result is an API's answer as an MCP tool result.
type Result struct {
	// Text is the answer's body (a JSON body as it came), or for a body
	// that is not UTF-8 a line saying its size and type; for a failed call
	// it begins with the status or the cause.
	Text string
	// Structured is the JSON body of a 2xx answer of a tool with an
	// output schema (as "result" of an object when the schema is
	// wrapped), else nil.
	Structured json.RawMessage
	// IsError is set for a 4xx or 5xx answer and for a call that got no
	// answer.
	IsError bool
	// Status is the answer's HTTP status, 0 when there was none.
	Status int
}

// Call calls tool with args (a JSON object, or empty for none) through
// client, following redirects only within the base URL's origin, and maps
// the answer to a Result. Its error is ErrUnknownTool; an ErrArguments for
// arguments that are not an object, lack a required parameter, name one
// the tool does not have, or would leave a path segment or set a header
// no argument may (values are not checked against the input schema: the
// server that lists the tool does that); or ctx's cause when ctx ends.
// An answer, whatever its status, or a failure to get one, is a Result.
func (a *API) Call(ctx context.Context, client *http.Client, tool string, args json.RawMessage) (Result, error) {
	callCtx, cancel := context.WithTimeoutCause(ctx, a.Timeout, errTimeout)
	defer cancel()
	req, o, err := a.request(callCtx, tool, args)
	if err != nil {
		return Result{}, err
	}
	c := *client
	c.CheckRedirect = a.checkRedirect
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, context.Cause(ctx)
		}
		if errors.Is(context.Cause(callCtx), errTimeout) {
			return Result{Text: fmt.Sprintf("request failed: no answer within %v", a.Timeout), IsError: true}, nil
		}
		return Result{Text: "request failed: " + err.Error(), IsError: true}, nil
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, a.MaxResponseBytes+1))
	if err != nil {
		return Result{Text: fmt.Sprintf("HTTP %s: reading the answer failed: %v", resp.Status, err), IsError: true, Status: resp.StatusCode}, nil
	}
	if int64(len(body)) > a.MaxResponseBytes {
		return Result{Text: fmt.Sprintf("HTTP %s: the answer exceeds %d bytes", resp.Status, a.MaxResponseBytes), IsError: true, Status: resp.StatusCode}, nil
	}
	return result(o, resp, body), nil
}

// errTimeout is the cause of a call that outlived API.Timeout.
var errTimeout = errors.New("openapi: call timed out")

// checkRedirect follows a redirect only within the base URL's origin, at
// most maxRedirects times.
func (a *API) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if !sameOrigin(req.URL, a.base) {
		return fmt.Errorf("redirect to another origin (%s://%s) refused", req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// sameOrigin reports whether u and base have the same scheme, host and
// port.
func sameOrigin(u, base *url.URL) bool {
	return strings.EqualFold(u.Scheme, base.Scheme) && strings.EqualFold(hostPort(u), hostPort(base))
}

// hostPort is u's host and port, the scheme's default port made explicit.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return u.Hostname() + ":" + port
}

// result maps an answer to a Result.
func result(o *operation, resp *http.Response, body []byte) Result {
	r := Result{Status: resp.StatusCode}
	ct := resp.Header.Get("Content-Type")
	text := string(body)
	if !utf8.Valid(body) {
		text = fmt.Sprintf("(%d bytes of %s, not shown)", len(body), ct)
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		r.Text = text
		if o.tool.OutputSchema != nil && isJSON(ct) && json.Valid(body) {
			r.Structured = bytes.TrimSpace(body)
			if o.wrapped {
				r.Structured = append(append([]byte(`{"result":`), r.Structured...), '}')
			}
		}
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		r.IsError = true
		r.Text = "HTTP " + resp.Status + ": redirect not followed"
	default:
		r.IsError = true
		r.Text = "HTTP " + resp.Status
		if text != "" {
			r.Text += ": " + text
		}
	}
	return r
}

// request builds the request of a call to tool with args, to the base URL.
func (a *API) request(ctx context.Context, tool string, args json.RawMessage) (*http.Request, *operation, error) {
	o := a.ops[tool]
	if o == nil {
		return nil, nil, fmt.Errorf("%w %q", ErrUnknownTool, tool)
	}
	var in map[string]json.RawMessage
	if len(bytes.TrimSpace(args)) > 0 {
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, nil, fmt.Errorf("%w: not a JSON object: %w", ErrArguments, err)
		}
	}
	known := make(map[string]bool, len(o.params)+1)
	path := o.path
	query := url.Values{}
	header := http.Header{}
	var cookies []*http.Cookie
	for _, p := range o.params {
		known[p.prop] = true
		raw, ok := in[p.prop]
		if !ok || string(raw) == "null" {
			if p.required {
				return nil, nil, fmt.Errorf("%w: %q is required", ErrArguments, p.prop)
			}
			continue
		}
		values, err := scalars(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %q: %w", ErrArguments, p.prop, err)
		}
		switch p.in {
		case "path":
			v := strings.Join(values, ",")
			if v == "" || v == "." || v == ".." {
				return nil, nil, fmt.Errorf("%w: path parameter %q may not be empty, \".\" or \"..\"", ErrArguments, p.prop)
			}
			path = strings.ReplaceAll(path, "{"+p.name+"}", url.PathEscape(v))
		case "query":
			if p.explode {
				for _, v := range values {
					query.Add(p.name, v)
				}
			} else {
				query.Add(p.name, strings.Join(values, ","))
			}
		case "header":
			v := strings.Join(values, ",")
			if forbiddenHeader(p.name) || strings.ContainsAny(v, "\r\n\x00") {
				return nil, nil, fmt.Errorf("%w: header parameter %q: refused", ErrArguments, p.prop)
			}
			header.Add(p.name, v)
		case "cookie":
			v := strings.Join(values, ",")
			if !cookieSafe(p.name, v) {
				return nil, nil, fmt.Errorf("%w: cookie parameter %q: a byte a cookie cannot carry", ErrArguments, p.prop)
			}
			cookies = append(cookies, &http.Cookie{Name: p.name, Value: v})
		}
	}
	var body io.Reader
	if o.body != "" {
		known[o.body] = true
		if raw, ok := in[o.body]; ok {
			body = bytes.NewReader(raw)
			header.Set("Content-Type", o.media)
		}
	}
	for k := range in {
		if !known[k] {
			return nil, nil, fmt.Errorf("%w: unknown argument %q", ErrArguments, k)
		}
	}
	u := *a.base
	u.RawPath = a.base.EscapedPath() + path
	unescaped, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrArguments, err)
	}
	u.Path = unescaped
	if u.EscapedPath() != u.RawPath {
		return nil, nil, fmt.Errorf("%w: the path %q would not be sent as built", ErrArguments, u.RawPath)
	}
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, o.method, u.String(), body)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrArguments, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	req.Header.Set("Accept", "application/json, */*;q=0.5")
	return req, o, nil
}

// cookieSafe reports whether a cookie of name and value is sent as it is:
// name a token, value cookie-octets (RFC 6265, section 4.1.1), so that
// net/http neither drops bytes of it nor logs that it did.
func cookieSafe(name, value string) bool {
	if name == "" {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	for i := range len(value) {
		c := value[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == ',' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}

// scalars is a parameter's value as strings: a string as it is, a number
// or boolean as JSON spells it, each element of an array likewise, and an
// object as its JSON text.
func scalars(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		out := make([]string, 0, len(list))
		for _, e := range list {
			s, err := scalar(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := scalar(raw)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

// scalar is one JSON value as a parameter's text.
func scalar(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	if !json.Valid(raw) {
		return "", errors.New("not JSON")
	}
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return "", err
	}
	return c.String(), nil
}
