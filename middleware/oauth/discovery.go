package oauth

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/vigil-mcp/vigil/internal/asmeta"
)

// maxMetadataBody bounds the documents read from an authorization server:
// discovery documents, JWK Sets and introspection answers.
const maxMetadataBody = asmeta.MaxBody

// defaultHTTPTimeout bounds a call to the authorization server when the
// caller gave no HTTP client.
const defaultHTTPTimeout = 10 * time.Second

// serverMetadata is an authorization server's metadata (RFC 8414 §2), as
// discover reads it.
type serverMetadata = asmeta.Server

// errIssuerMismatch is returned (wrapped) by discover when the metadata
// names another issuer than the one asked for (RFC 8414 §3.3): the
// document must not be used.
var errIssuerMismatch = asmeta.ErrIssuerMismatch

// discover fetches the metadata of the authorization server issuer: first
// the RFC 8414 document (/.well-known/oauth-authorization-server, inserted
// before the issuer's path, if any), then, if that fails, the OpenID
// Connect one (issuer + /.well-known/openid-configuration). The document's
// issuer must equal issuer exactly; a document naming another issuer is an
// error wrapping errIssuerMismatch and stops the search (asmeta.Discover).
//
// client nil uses a client with a 10 s timeout; ctx bounds the whole
// search. Bodies over 1 MiB, answers other than 200 and non-JSON answers
// are refused. The issuer, and any redirect, must be https unless its host
// is loopback (localhost, 127.0.0.0/8, ::1), or allowHTTP; the caller
// checks the endpoints it then uses from the document.
func discover(ctx context.Context, client *http.Client, issuer string, allowHTTP bool) (*serverMetadata, error) {
	if err := checkTransport("discover: issuer", issuer, allowHTTP); err != nil {
		return nil, err
	}
	md, err := asmeta.Discover(ctx, guardRedirects(client, allowHTTP), issuer)
	if err != nil {
		return nil, fmt.Errorf("auth: discover: %w", err)
	}
	return md, nil
}
