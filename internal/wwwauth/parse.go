// Package wwwauth parses the challenge of a WWW-Authenticate header, as a
// client reads it: the tests of the resource server (middleware/oauth) and
// of the command check the challenges they are answered with, and the
// fuzz test of oauth's writer round-trips through it. It is a leaf: it
// imports nothing of Vigil.
package wwwauth

import (
	"errors"
	"strings"
)

// ErrMalformed is returned by [Parse] for a value that is
// not one challenge of auth-params.
var ErrMalformed = errors.New("auth: malformed challenge")

// Parse parses one challenge of the form `scheme name=value, …`
// (RFC 9110 §11.6.1 with auth-params, values tokens or quoted-strings). It
// returns the scheme as written and the parameters by lowercase name, with
// quoted-strings unescaped. A duplicate parameter, a token68 form, or a
// second challenge is [ErrMalformed].
func Parse(s string) (scheme string, params map[string]string, err error) {
	s = strings.TrimLeft(s, " \t")
	i := 0
	for i < len(s) && isTokenChar(s[i]) {
		i++
	}
	if i == 0 {
		return "", nil, ErrMalformed
	}
	scheme, s = s[:i], s[i:]
	params = map[string]string{}
	first := true
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return scheme, params, nil
		}
		if !first {
			if s[0] != ',' {
				return "", nil, ErrMalformed
			}
			s = strings.TrimLeft(s[1:], " \t")
			if s == "" {
				return "", nil, ErrMalformed
			}
		}
		first = false
		j := 0
		for j < len(s) && isTokenChar(s[j]) {
			j++
		}
		if j == 0 {
			return "", nil, ErrMalformed
		}
		name := strings.ToLower(s[:j])
		s = strings.TrimLeft(s[j:], " \t")
		if s == "" || s[0] != '=' {
			return "", nil, ErrMalformed // token68, or a second scheme
		}
		s = strings.TrimLeft(s[1:], " \t")
		var value string
		if s != "" && s[0] == '"' {
			var b strings.Builder
			k := 1
			closed := false
			for ; k < len(s); k++ {
				c := s[k]
				if c == '\\' && k+1 < len(s) {
					k++
					b.WriteByte(s[k])
					continue
				}
				if c == '"' {
					closed = true
					k++
					break
				}
				if c < 0x20 && c != '\t' || c == 0x7f {
					return "", nil, ErrMalformed
				}
				b.WriteByte(c)
			}
			if !closed {
				return "", nil, ErrMalformed
			}
			value, s = b.String(), s[k:]
		} else {
			k := 0
			for k < len(s) && isTokenChar(s[k]) {
				k++
			}
			if k == 0 {
				return "", nil, ErrMalformed
			}
			value, s = s[:k], s[k:]
		}
		if _, dup := params[name]; dup {
			return "", nil, ErrMalformed
		}
		params[name] = value
	}
}

// isTokenChar reports whether c is a tchar (RFC 9110 §5.6.2).
func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
