package oauth

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/vigil-mcp/vigil/internal/wholebody"
)

// maxTokenBytes is the longest bearer token the guard accepts. A longer
// Authorization header is answered 401 invalid_token (not 431): the header
// is well formed, the token is just not one this server could have issued.
const maxTokenBytes = 8 << 10

// errInvalidRequest is wrapped by the [*Error] (reason
// [ReasonInvalidToken]) of a malformed request, which RFC 6750 answers 400
// error="invalid_request": two Authorization headers, or a token sent in
// the URL query or a form-encoded body, where this server never accepts
// one.
var errInvalidRequest = errors.New("auth: invalid request")

// bearerToken returns the access token of r's Authorization header,
// checked strictly: exactly one Authorization header, the scheme "Bearer"
// (any case), or "DPoP" when dpop (then isDPoP), then one space and a
// b64token (RFC 6750 §2.1, RFC 9449 §7.1) of at most maxTokenBytes. A
// request without credentials, or with another scheme (Basic, say), is
// [ReasonMissingToken]; a malformed header or an oversized token is
// [ReasonInvalidToken]; a token in the URL query (access_token) is
// [ReasonInvalidToken] wrapping errInvalidRequest. It does not read the
// body: see [ResourceServer.Handler] for form-encoded bodies.
func bearerToken(r *http.Request, dpop bool) (token string, isDPoP bool, err error) {
	if r.URL != nil && queryHasAccessToken(r.URL.RawQuery) {
		return "", false, &Error{Reason: ReasonInvalidToken, Description: "access tokens are accepted only in the Authorization header", Err: errInvalidRequest}
	}
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return "", false, &Error{Reason: ReasonMissingToken}
	case 1:
	default:
		return "", false, &Error{Reason: ReasonInvalidToken, Description: "more than one Authorization header", Err: errInvalidRequest}
	}
	return parseBearer(values[0], dpop)
}

// queryHasAccessToken reports whether a parameter of the raw query is named
// access_token once its name is percent-decoded (access%5Ftoken too), the
// name compared exactly as RFC 6750 §2.3 spells it. A query without
// "access_token" or a '%' is not parsed.
func queryHasAccessToken(raw string) bool {
	if !strings.Contains(raw, "access_token") && !strings.Contains(raw, "%") {
		return false
	}
	for raw != "" {
		var pair string
		if i := strings.IndexAny(raw, "&;"); i >= 0 {
			pair, raw = raw[:i], raw[i+1:]
		} else {
			pair, raw = raw, ""
		}
		name, _, _ := strings.Cut(pair, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if name == "access_token" {
			return true
		}
	}
	return false
}

// parseBearer extracts the token of one Authorization header value, of
// the scheme Bearer, or DPoP when dpop.
func parseBearer(v string, dpop bool) (token string, isDPoP bool, err error) {
	scheme, rest, _ := strings.Cut(v, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		if isDPoP = dpop && strings.EqualFold(scheme, "DPoP"); !isDPoP {
			// Another scheme, or none: the client did not try a bearer
			// token, which RFC 6750 §3.1 answers without an error code.
			return "", false, &Error{Reason: ReasonMissingToken}
		}
	}
	rest = strings.TrimLeft(rest, " ")
	if rest == "" {
		return "", isDPoP, &Error{Reason: ReasonInvalidToken, Description: "empty bearer token"}
	}
	if len(rest) > maxTokenBytes {
		return "", isDPoP, &Error{Reason: ReasonInvalidToken, Description: "bearer token too long"}
	}
	if strings.IndexByte(rest, ' ') >= 0 || strings.IndexByte(rest, '\t') >= 0 {
		return "", isDPoP, &Error{Reason: ReasonInvalidToken, Description: "malformed bearer token"}
	}
	// The characters (RFC 6750's b64token) are checked by the verifiers
	// on a cache miss (checkTokenSyntax): a token they verified before
	// passed, and a steady client's token is not scanned on every request.
	return rest, isDPoP, nil
}

// checkTokenLength refuses an empty token and one over maxTokenBytes,
// before a verifier hashes it.
func checkTokenLength(token string) error {
	switch {
	case token == "":
		return &Error{Reason: ReasonInvalidToken, Description: "empty token"}
	case len(token) > maxTokenBytes:
		return &Error{Reason: ReasonInvalidToken, Description: "token too long"}
	}
	return nil
}

// checkTokenSyntax returns an [*Error] (invalid_token) unless token is an
// RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" )
// *"=". bearerToken checks only a token's structure (not empty, not too
// long, no spaces); the verifiers check its characters with this before
// they parse it or send it anywhere, after their cache, which holds only
// tokens that passed. A [Verifier] of your own should call it likewise.
func checkTokenSyntax(token string) error {
	if !isB64Token(token) {
		return &Error{Reason: ReasonInvalidToken, Description: "malformed bearer token"}
	}
	return nil
}

// isB64Token reports whether s is a b64token: 1*( ALPHA / DIGIT / "-" / "."
// / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		if !isB64Char(s[i]) {
			break
		}
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// isB64Char reports whether c may appear before the padding of a b64token:
// a bit test in two 64-bit masks, as cheap per byte as a comparison.
func isB64Char(c byte) bool {
	const (
		lo = 1<<'+' | 1<<'-' | 1<<'.' | 1<<'/' | 0x3ff<<'0'                        // bytes 0-63
		hi = 0x3ffffff<<('A'-64) | 1<<('_'-64) | 0x3ffffff<<('a'-64) | 1<<('~'-64) // bytes 64-127
	)
	switch {
	case c < 64:
		return lo>>c&1 != 0
	case c < 128:
		return hi>>(c-64)&1 != 0
	}
	return false
}

// isForm reports whether r carries a form-encoded body.
func isForm(r *http.Request) bool {
	const form = "application/x-www-form-urlencoded"
	ct := r.Header.Get("Content-Type")
	if len(ct) < len(form) || !strings.EqualFold(ct[:len(form)], form) {
		return false // the common case, decided without parsing
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == form
}

// exactReadMax is the longest declared body readBody allocates at once.
const exactReadMax = 64 << 10

// readBody reads r's body up to limit bytes and puts back a body that
// yields the same bytes (and the rest, when there was more). It reports
// whether the body was longer than limit.
func readBody(r *http.Request, limit int64) ([]byte, bool, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, false, nil
	}
	if n := r.ContentLength; n >= 0 && n <= min(limit, exactReadMax) {
		// The usual request: short, of known length, read in one buffer
		// of that size and handed on whole. A longer one is read as it
		// arrives, so that a declared length the client never sends costs
		// no memory.
		b := make([]byte, n)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, false, err
		}
		r.Body = wholebody.New(b, r.Body) // the Endpoint takes b, unread
		return b, false, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, false, err
	}
	over := int64(len(b)) > limit
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
	return b, over, nil
}
