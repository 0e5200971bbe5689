// Package flagvalue holds the syntaxes that several of vigil's flag values
// share: comma-separated lists ([SplitList]), the URLs of issuers,
// resources, upstreams and token endpoints ([CheckURL]), secrets read from
// a file or a variable ([Secret]), HTTP header names ([IsHeaderName]), and
// a URL's password ([URLHasPassword]), which a command line must not
// carry. Only cmd/ imports it.
package flagvalue

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// SplitList returns the non-empty, trimmed items of the comma-separated s.
func SplitList(s string) []string {
	var items []string
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			items = append(items, v)
		}
	}
	return items
}

// CheckURL accepts an absolute http or https URL with a host and no
// fragment, as issuers and resource URIs must be.
func CheckURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return err
	case u.Scheme != "https" && u.Scheme != "http":
		return errors.New("want an http or https URL")
	case u.Host == "":
		return errors.New("no host")
	case u.Fragment != "" || strings.Contains(s, "#"):
		return errors.New("a fragment is not allowed")
	}
	return nil
}

// Secret returns v, or the contents of file FILE for @FILE (one trailing
// line end cut), or the variable VAR for env:VAR, read with getenv. Its
// errors name where it looked, never a value.
func Secret(v string, getenv func(string) string) (string, error) {
	switch {
	case strings.HasPrefix(v, "@"):
		data, err := os.ReadFile(v[1:])
		if err != nil {
			return "", err
		}
		s := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
		if s == "" {
			return "", fmt.Errorf("%s is empty", v[1:])
		}
		return s, nil
	case strings.HasPrefix(v, "env:"):
		s := getenv(v[len("env:"):])
		if s == "" {
			return "", fmt.Errorf("the variable %s is empty or not set", v[len("env:"):])
		}
		return s, nil
	}
	return v, nil
}

// IsHeaderName reports whether s is an HTTP header name (a token).
func IsHeaderName(s string) bool {
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// URLHasPassword reports whether a URL carries a password: in its user
// information (any form, Sentinel's and Cluster's lists of hosts
// included, which net/url does not parse), or in a query parameter whose
// name holds "pass", "secret" or "token", in any case (go-redis's
// password of a Sentinel URL's data nodes, a sentinel_password, ...).
func URLHasPassword(raw string) bool {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return false
	}
	authority, query := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
		if _, q, ok := strings.Cut(rest, "?"); ok {
			query, _, _ = strings.Cut(q, "#")
		}
	}
	if i := strings.LastIndex(authority, "@"); i >= 0 && strings.Contains(authority[:i], ":") {
		return true
	}
	for pair := range strings.SplitSeq(query, "&") {
		name, _, _ := strings.Cut(pair, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		name = strings.ToLower(name)
		if strings.Contains(name, "pass") || strings.Contains(name, "secret") || strings.Contains(name, "token") {
			return true
		}
	}
	return false
}
