package oauth

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Verifier checks a bearer token and returns the principal it speaks for.
// An error is an [*Error] whose Reason says why the token was refused; a
// Reason of [ReasonVerifierError] means the verifier could not decide (the
// authorization server is unreachable), and [ReasonVerifierBusy] that it
// would not ask now; both are answered 503, not 401.
// Implementations are safe for concurrent use. The token has passed
// bearerToken's structural checks; its characters are the verifier's to
// check with [checkTokenSyntax] (after a cache, if it has one).
type Verifier interface {
	Verify(ctx context.Context, token string) (*auth.Principal, error)
}

// Reason is why a request was refused, the label of
// mcp_server_auth_failures_total: a small fixed set.
type Reason uint8

// The reasons, in the order of the checks.
const (
	ReasonMissingToken             Reason = iota // no Authorization header
	ReasonInvalidToken                           // malformed, bad signature, wrong algorithm, not active, in the query string...
	ReasonExpired                                // exp passed, or nbf not reached
	ReasonWrongAudience                          // aud does not name this resource
	ReasonWrongIssuer                            // iss is not the configured issuer
	ReasonUnknownKey                             // kid not in the JWKS, even after a refetch
	ReasonInsufficientScope                      // valid token, scope missing (403)
	ReasonSessionPrincipalMismatch               // a session id presented by another principal (404)
	ReasonVerifierError                          // the verifier could not decide (503)
	ReasonVerifierBusy                           // the verifier would not ask now: too many new tokens (503)
	ReasonInvalidDPoPProof                       // a DPoP proof missing, malformed, replayed or not matching the request or the token (401)
	ReasonUseDPoPNonce                           // a DPoP proof without the server's current nonce (401, with a DPoP-Nonce)
	numReasons
)

var reasonNames = [numReasons]string{
	"missing_token", "invalid_token", "expired", "wrong_audience", "wrong_issuer",
	"unknown_key", "insufficient_scope", "", "verifier_error", "verifier_busy",
	"invalid_dpop_proof", "use_dpop_nonce",
}

// String returns the reason's metric label, such as "wrong_audience".
func (r Reason) String() string {
	if r == ReasonSessionPrincipalMismatch {
		// The transport reports this refusal; its label is written once,
		// in package protocol.
		return protocol.RejectSessionPrincipal.String()
	}
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Reasons returns every reason, for pre-creating metric series.
func Reasons() []Reason {
	rs := make([]Reason, numReasons)
	for i := range rs {
		rs[i] = Reason(i)
	}
	return rs
}

// Error is a refused token: the reason and a description safe to show the
// client (it never contains the token).
type Error struct {
	Reason      Reason
	Description string
	Err         error // the cause, for logs; may be nil
}

func (e *Error) Error() string {
	if e.Description == "" {
		return "auth: " + e.Reason.String()
	}
	return "auth: " + e.Reason.String() + ": " + e.Description
}

func (e *Error) Unwrap() error { return e.Err }

// reasonOf returns the reason of err: its [*Error]'s, or
// [ReasonVerifierError] for any other error.
func reasonOf(err error) Reason {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Reason
	}
	return ReasonVerifierError
}
