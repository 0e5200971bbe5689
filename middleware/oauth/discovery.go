package oauth

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
	"time"
)

// maxMetadataBody bounds the documents read from an authorization server:
// discovery documents, JWK Sets and introspection answers.
const maxMetadataBody = 1 << 20

// defaultHTTPTimeout bounds a call to the authorization server when the
// caller gave no HTTP client.
const defaultHTTPTimeout = 10 * time.Second

// serverMetadata is an authorization server's metadata (RFC 8414 §2), as
// discover reads it. Only the fields a resource server uses are kept.
type serverMetadata struct {
	Issuer                                    string   `json:"issuer"`
	AuthorizationEndpoint                     string   `json:"authorization_endpoint,omitempty"`
	TokenEndpoint                             string   `json:"token_endpoint,omitempty"`
	JWKSURI                                   string   `json:"jwks_uri,omitempty"`
	IntrospectionEndpoint                     string   `json:"introspection_endpoint,omitempty"`
	RegistrationEndpoint                      string   `json:"registration_endpoint,omitempty"`
	ScopesSupported                           []string `json:"scopes_supported,omitempty"`
	ResponseTypesSupported                    []string `json:"response_types_supported,omitempty"`
	GrantTypesSupported                       []string `json:"grant_types_supported,omitempty"`
	CodeChallengeMethodsSupported             []string `json:"code_challenge_methods_supported,omitempty"`
	IntrospectionEndpointAuthMethodsSupported []string `json:"introspection_endpoint_auth_methods_supported,omitempty"`
}

// errIssuerMismatch is returned (wrapped) by discover when the metadata
// names another issuer than the one asked for (RFC 8414 §3.3): the
// document must not be used.
var errIssuerMismatch = errors.New("auth: discovered issuer differs from the configured issuer")

// discover fetches the metadata of the authorization server issuer: first
// the RFC 8414 document (/.well-known/oauth-authorization-server, inserted
// before the issuer's path, if any), then, if that fails, the OpenID
// Connect one (issuer + /.well-known/openid-configuration). The document's
// issuer must equal issuer exactly; a document naming another issuer is an
// error wrapping errIssuerMismatch and stops the search.
//
// client nil uses a client with a 10 s timeout; ctx bounds the whole
// search. Bodies over 1 MiB, answers other than 200 and non-JSON answers
// are refused. The issuer, and any redirect, must be https unless its host
// is loopback (localhost, 127.0.0.0/8, ::1), or allowHTTP; the caller
// checks the endpoints it then uses from the document.
func discover(ctx context.Context, client *http.Client, issuer string, allowHTTP bool) (*serverMetadata, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil, fmt.Errorf("auth: discover: issuer: %w", err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("auth: discover: issuer %q is not an http(s) URL without query or fragment", issuer)
	}
	if err := checkTransport("discover: issuer", issuer, allowHTTP); err != nil {
		return nil, err
	}
	client = guardRedirects(client, allowHTTP)
	oauth := *u
	oauth.Path = "/.well-known/oauth-authorization-server" + strings.TrimSuffix(u.Path, "/")
	oauth.RawPath = ""
	md, err1 := fetchMetadata(ctx, client, oauth.String(), issuer)
	if err1 == nil {
		return md, nil
	}
	if errors.Is(err1, errIssuerMismatch) || ctx.Err() != nil {
		return nil, err1
	}
	md, err2 := fetchMetadata(ctx, client, strings.TrimSuffix(issuer, "/")+"/.well-known/openid-configuration", issuer)
	if err2 == nil {
		return md, nil
	}
	return nil, errors.Join(err1, err2)
}

func fetchMetadata(ctx context.Context, client *http.Client, where, issuer string) (*serverMetadata, error) {
	var md serverMetadata
	if err := getJSON(ctx, client, where, &md); err != nil {
		return nil, fmt.Errorf("auth: discover: %w", err)
	}
	if md.Issuer != issuer {
		return nil, fmt.Errorf("%w: %s names %q, want %q", errIssuerMismatch, where, md.Issuer, issuer)
	}
	return &md, nil
}

// getJSON GETs where and decodes its 200 JSON answer, of at most
// maxMetadataBody bytes, into v.
func getJSON(ctx context.Context, client *http.Client, where string, v any) error {
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
	return decodeJSONResponse(resp, where, v)
}

// decodeJSONResponse checks that resp is a 200 JSON answer of at most
// maxMetadataBody bytes and decodes it into v. It does not close the body.
func decodeJSONResponse(resp *http.Response, where string, v any) error {
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: status %d", where, resp.StatusCode)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil ||
		(mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return fmt.Errorf("%s: content type %q is not JSON", where, resp.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBody+1))
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if len(body) > maxMetadataBody {
		return fmt.Errorf("%s: body over %d bytes", where, maxMetadataBody)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}
