package middleware

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unicode"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/server"
)

// Redactor returns what a span records of content a client or a tool sent
// ([WithContentCapture]): value is JSON (tool arguments, a tool result, or
// a prompt variable's value as a JSON string), and key the name it came
// under: "" for arguments and results, the variable's name for a prompt
// variable. It must be safe for concurrent use and must not keep value.
type Redactor func(key string, value []byte) string

// Attribute keys of the opt-in content of the GenAI conventions.
const (
	toolCallArgumentsKey = attribute.Key("gen_ai.tool.call.arguments")
	toolCallResultKey    = attribute.Key("gen_ai.tool.call.result")
	promptVariablePrefix = "gen_ai.prompt.variable."
)

// Bounds of captured content, whatever the Redactor: the text of one
// attribute, the prompt variables of one span, a variable's name.
const (
	maxCapturedBytes    = 64 << 10
	maxPromptVariables  = 32
	maxPromptVarNameLen = 64
	defaultRedactBytes  = 4 << 10
	redacted            = "[REDACTED]"
)

// WithContentCapture makes the tracing of [WithTracerProvider] record the content of tool calls and
// prompts on their spans, each value through r: a tools/call's arguments
// (gen_ai.tool.call.arguments) and result (gen_ai.tool.call.result), a
// prompts/get's arguments (gen_ai.prompt.variable.<name>, the first 32 by
// name). nil r means DefaultRedactor(0). Content is off by default: it may
// hold personal data and secrets that r must remove. Only recording spans
// pay for it; whatever r returns is cut at 64 KiB.
func WithContentCapture(r Redactor) InstrumentationOption {
	if r == nil {
		r = DefaultRedactor(0)
	}
	return instrumentationOption(func(c *instrumentationConfig) { c.tracing.capture = r })
}

// DefaultRedactor returns a Redactor that masks, as "[REDACTED]", every
// value under a key (an object member, a prompt variable) whose name
// contains, in any case, password, passwd, secret, token, authorization,
// api_key, apikey, api-key, private_key, credential or cookie, and every
// string that looks like a credential: a bearer or basic authorization, a
// JWT, a key with a known prefix (sk-, ghp_, xoxb-, AKIA, ...), or a long
// mixed-case alphanumeric run. It returns compact JSON cut at maxBytes
// (4096 when maxBytes ≤ 0), marked with "…"; a value that is not JSON is
// treated as one string.
func DefaultRedactor(maxBytes int) Redactor {
	if maxBytes <= 0 {
		maxBytes = defaultRedactBytes
	}
	return func(key string, value []byte) string {
		if sensitiveKey(key) {
			return redacted
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(value))
		d.UseNumber()
		if d.Decode(&v) != nil {
			v = string(value)
		}
		out, err := json.Marshal(redactValue(v))
		if err != nil {
			return redacted
		}
		return cutName(string(out), maxBytes)
	}
}

// redactValue returns v, decoded JSON, with what looks secret masked.
func redactValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if sensitiveKey(k) {
				t[k] = redacted
			} else {
				t[k] = redactValue(e)
			}
		}
	case []any:
		for i, e := range t {
			t[i] = redactValue(e)
		}
	case string:
		if looksSecret(t) {
			return redacted
		}
	}
	return v
}

// sensitiveKey reports whether a name says its value is a secret.
func sensitiveKey(k string) bool {
	if k == "" {
		return false
	}
	k = strings.ToLower(k)
	for _, s := range [...]string{"password", "passwd", "secret", "token", "authorization", "api_key", "apikey", "api-key", "private_key", "credential", "cookie"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// looksSecret reports whether s looks like a credential.
func looksSecret(s string) bool {
	s = strings.TrimSpace(s)
	lower := strings.ToLower(s)
	if strings.HasPrefix(lower, "bearer ") || strings.HasPrefix(lower, "basic ") {
		return true
	}
	if strings.HasPrefix(s, "eyJ") && strings.Count(s, ".") == 2 && !strings.ContainsAny(s, " \t\n") {
		return true // a JWT
	}
	for _, p := range [...]string{"sk-", "sk_live_", "sk_test_", "rk_live_", "ghp_", "gho_", "ghs_", "github_pat_", "xoxb-", "xoxp-", "xoxa-", "glpat-", "AKIA", "ASIA", "AIza"} {
		if strings.HasPrefix(s, p) && len(s) >= len(p)+12 && !strings.ContainsAny(s, " \t\n") {
			return true
		}
	}
	return opaqueToken(s)
}

// opaqueToken reports whether s is one run of at least 32 characters of a
// key's alphabet (letters, digits, - _ + / = .) mixing upper and lower
// case and digits, as keys and tokens do and words, UUIDs and hex digests
// do not.
func opaqueToken(s string) bool {
	if len(s) < 32 {
		return false
	}
	var upper, lower, digit bool
	for _, r := range s {
		switch {
		case r > unicode.MaxASCII:
			return false
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsLower(r):
			lower = true
		case unicode.IsDigit(r):
			digit = true
		case !strings.ContainsRune("-_+/=.", r):
			return false
		}
	}
	return upper && lower && digit
}

// captureContent records the content of req and its outcome on span
// through r ([WithContentCapture]). A Redactor that panics records nothing
// more, and the span says so with a "content_capture_failed" event.
func captureContent(r Redactor, span trace.Span, req *server.Request, out server.Outcome) {
	if !span.IsRecording() {
		return
	}
	defer func() {
		if recover() != nil {
			span.AddEvent("content_capture_failed", trace.WithTimestamp(out.Ended)) // inside the span, which ends then
		}
	}()
	switch req.Method {
	case "tools/call":
		var p struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(req.Params, &p) == nil && len(p.Arguments) > 0 {
			span.SetAttributes(toolCallArgumentsKey.String(cutName(r("", p.Arguments), maxCapturedBytes)))
		}
		if out.Err == nil && out.Result != nil {
			if b, err := json.Marshal(out.Result); err == nil {
				span.SetAttributes(toolCallResultKey.String(cutName(r("", b), maxCapturedBytes)))
			}
		}
	case "prompts/get":
		var p struct {
			Arguments map[string]string `json:"arguments"`
		}
		if json.Unmarshal(req.Params, &p) != nil {
			return
		}
		names := slices.Sorted(maps.Keys(p.Arguments))
		for _, name := range names[:min(len(names), maxPromptVariables)] {
			b, _ := json.Marshal(p.Arguments[name])
			span.SetAttributes(attribute.String(promptVariablePrefix+cutName(name, maxPromptVarNameLen), cutName(r(name, b), maxCapturedBytes)))
		}
	}
}
