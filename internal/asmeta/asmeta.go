// Package asmeta reads an OAuth authorization server's metadata (RFC 8414,
// or its OpenID Connect discovery document) and the JSON documents around
// it (RFC 9728 protected-resource metadata, JWK Sets), bounded: the one
// implementation of the resource server's discovery (middleware/oauth)
// and of the gateway's as an OAuth client of an upstream's authorization
// server (cmd/internal/connect). It is a leaf: it imports nothing of
// Vigil.
package asmeta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// MaxBody bounds a document read: a metadata document, a JWK Set, an
// introspection answer.
const MaxBody = 1 << 20

// Server is an authorization server's metadata (RFC 8414 §2), the fields
// Vigil uses of it.
type Server struct {
	Issuer                                    string   `json:"issuer"`
	AuthorizationEndpoint                     string   `json:"authorization_endpoint,omitempty"`
	TokenEndpoint                             string   `json:"token_endpoint,omitempty"`
	JWKSURI                                   string   `json:"jwks_uri,omitempty"`
	IntrospectionEndpoint                     string   `json:"introspection_endpoint,omitempty"`
	RevocationEndpoint                        string   `json:"revocation_endpoint,omitempty"`
	RegistrationEndpoint                      string   `json:"registration_endpoint,omitempty"`
	ScopesSupported                           []string `json:"scopes_supported,omitempty"`
	ResponseTypesSupported                    []string `json:"response_types_supported,omitempty"`
	GrantTypesSupported                       []string `json:"grant_types_supported,omitempty"`
	CodeChallengeMethodsSupported             []string `json:"code_challenge_methods_supported,omitempty"`
	IntrospectionEndpointAuthMethodsSupported []string `json:"introspection_endpoint_auth_methods_supported,omitempty"`
	// AuthorizationResponseIssParameterSupported: the authorization
	// response carries iss (RFC 9207).
	AuthorizationResponseIssParameterSupported bool `json:"authorization_response_iss_parameter_supported,omitempty"`
}

// ErrIssuerMismatch is wrapped by Discover's error when a document names
// another issuer than the one asked for (RFC 8414 §3.3): it must not be
// used, and the search stops.
var ErrIssuerMismatch = errors.New("the discovered issuer differs from the configured issuer")

// Discover fetches the metadata of the authorization server issuer, an
// http(s) URL whose transport the caller checked: first the RFC 8414
// document (/.well-known/oauth-authorization-server, inserted before the
// issuer's path, if any), then, if that fails, the OpenID Connect one
// (issuer + /.well-known/openid-configuration). The document's issuer must
// equal issuer exactly; one naming another issuer is an error wrapping
// ErrIssuerMismatch and stops the search. ctx bounds the whole search;
// answers other than a 200 JSON document of at most MaxBody bytes are
// refused. The caller checks the endpoints it uses.
func Discover(ctx context.Context, client *http.Client, issuer string) (*Server, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil, fmt.Errorf("issuer: %w", err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("issuer %q is not an http(s) URL without query or fragment", issuer)
	}
	oauth := *u
	oauth.Path = "/.well-known/oauth-authorization-server" + strings.TrimSuffix(u.Path, "/")
	oauth.RawPath = ""
	md, err1 := fetch(ctx, client, oauth.String(), issuer)
	if err1 == nil {
		return md, nil
	}
	if errors.Is(err1, ErrIssuerMismatch) || ctx.Err() != nil {
		return nil, err1
	}
	md, err2 := fetch(ctx, client, strings.TrimSuffix(issuer, "/")+"/.well-known/openid-configuration", issuer)
	if err2 == nil {
		return md, nil
	}
	return nil, errors.Join(err1, err2)
}

func fetch(ctx context.Context, client *http.Client, where, issuer string) (*Server, error) {
	var md Server
	if err := GetJSON(ctx, client, where, &md); err != nil {
		return nil, err
	}
	if md.Issuer != issuer {
		return nil, fmt.Errorf("%w: %s names %q, want %q", ErrIssuerMismatch, where, md.Issuer, issuer)
	}
	return &md, nil
}

// GetJSON GETs where with client and decodes its answer into v, as
// DecodeResponse does.
func GetJSON(ctx context.Context, client *http.Client, where string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	return DecodeResponse(resp, where, v)
}

// DecodeResponse checks that resp is a 200 JSON answer (application/json
// or +json) of at most MaxBody bytes and decodes it into v; where names
// it in the errors. It does not close the body.
func DecodeResponse(resp *http.Response, where string, v any) error {
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: status %d", where, resp.StatusCode)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil ||
		(mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return fmt.Errorf("%s: content type %q is not JSON", where, resp.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if len(body) > MaxBody {
		return fmt.Errorf("%s: body over %d bytes", where, MaxBody)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}
