package oauth

import (
	"strings"
)

// challenge is one RFC 6750 Bearer challenge, the value of a
// WWW-Authenticate header.
type challenge struct {
	// Scheme is the challenge's scheme: "" for Bearer, or "DPoP".
	Scheme string
	// Error is the error code: "" (no credentials: no error attribute),
	// "invalid_request" (400), "invalid_token" (401) or
	// "insufficient_scope" (403).
	Error string
	// Scopes are every scope the operation needs (scope attribute).
	Scopes []string
	// ResourceMetadata is the URL of the protected resource metadata
	// (RFC 9728 resource_metadata attribute).
	ResourceMetadata string
	// Algs are the DPoP proof algorithms, space-separated (RFC 9449 §7.1
	// algs attribute).
	Algs string
	// Description is the human-readable error_description. Characters RFC
	// 6750 does not allow there (quotes, backslashes, controls, non-ASCII)
	// are replaced.
	Description string
}

// String returns the header value, such as
// `Bearer error="insufficient_scope", scope="a b", resource_metadata="…"`.
// Every value is a quoted-string, with CR, LF and other controls removed.
func (c challenge) String() string {
	var b strings.Builder
	if c.Scheme == "" {
		b.WriteString("Bearer")
	} else {
		b.WriteString(c.Scheme)
	}
	sep := " "
	param := func(name, value string) {
		b.WriteString(sep)
		sep = ", "
		b.WriteString(name)
		b.WriteString(`="`)
		b.WriteString(quote(value))
		b.WriteByte('"')
	}
	if c.Error != "" {
		param("error", c.Error)
	}
	if len(c.Scopes) > 0 {
		param("scope", strings.Join(c.Scopes, " "))
	}
	if c.ResourceMetadata != "" {
		param("resource_metadata", c.ResourceMetadata)
	}
	if c.Algs != "" {
		param("algs", c.Algs)
	}
	if c.Description != "" {
		param("error_description", sanitizeDescription(c.Description))
	}
	return b.String()
}

// sanitizeDescription returns s as an error_description may carry it (RFC
// 6750 §3: %x20-21 / %x23-5B / %x5D-7E): a quote becomes an apostrophe, a
// backslash a slash, anything else outside the set a space.
func sanitizeDescription(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '"':
			return '\''
		case r == '\\':
			return '/'
		case r < 0x20 || r > 0x7e:
			return ' '
		}
		return r
	}, s)
}

// quote escapes s for the inside of a quoted-string: a quote or backslash
// gets a backslash, and controls (CR and LF included) are dropped.
func quote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ { // bytewise: other bytes pass as they are
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
