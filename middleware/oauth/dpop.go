package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

// DPoPConfig configures the resource server's acceptance of DPoP-bound
// tokens (RFC 9449), in [Config.DPoP]: the Authorization scheme DPoP with
// a DPoP proof header, every check of RFC 9449 §4.3.
type DPoPConfig struct {
	// Required refuses every token presented as Bearer: each request must
	// carry a DPoP-bound token under the DPoP scheme, with its proof.
	// Without it, Bearer tokens are accepted unless they are bound
	// (cnf.jkt), which are refused under Bearer whatever the Config (RFC
	// 9449 §7.2).
	Required bool
	// Algorithms are the JWS algorithms a proof may be signed with,
	// advertised as dpop_signing_alg_values_supported and in the DPoP
	// challenge's algs; empty means the asymmetric ones (RS256, RS384,
	// RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA). HMAC and
	// "none" are refused.
	Algorithms []string
	// Window is how long after its iat a proof is accepted; 0 means a
	// minute. Ahead of now, an iat is accepted by at most 10 s (a client's
	// clock running fast), or Window when shorter. A proof's jti is
	// remembered until its iat plus Window (and a second), so at most
	// Window plus 11 s.
	Window time.Duration
	// NonceKey, when set (at least 32 bytes), has the server demand nonces
	// (RFC 9449 §9): a proof must carry a nonce handed out in a DPoP-Nonce
	// header within the last 5 to 10 minutes, or is answered 401
	// use_dpop_nonce with a fresh one. Replicas with the same key accept
	// each other's nonces.
	NonceKey []byte
	// Replay records each accepted proof, by a fixed-length digest of its
	// key and jti that tells nothing of either, for ttl, and reports
	// whether it is its first use: a store every replica shares, such as
	// redisshare's Shared.UseDPoPProof, so that a proof is accepted once
	// by the whole service. An error refuses the request with 503
	// (verifier_error): replay protection does not fail open. Nil: in
	// this process's memory, at most CacheSize proofs.
	Replay func(ctx context.Context, digest string, ttl time.Duration) (first bool, err error)
	// CacheSize bounds the in-memory replay cache; 0 means 1,000,000
	// proofs, 71 s (Window, 10 s ahead and a second) of 14,000 proofs a
	// second. A principal, and a key, may hold no more of them than the
	// room left for the others (so one alone at most half): a proof of
	// one that holds that many, or any proof when the cache is full of
	// proofs still within their window, is answered 503 verifier_busy
	// (Retry-After 1) rather than accepted unrecorded.
	CacheSize int
	// now is the clock; nil means time.Now. For the tests of this package.
	now func() time.Time
}

// Defaults and bounds of DPoP proofs.
const (
	defaultDPoPWindow    = time.Minute
	defaultDPoPCacheSize = 1_000_000
	// maxDPoPAhead bounds how far ahead of the server's clock a proof's
	// iat may be (a client's clock running fast), apart from Window: a
	// proof is remembered until its iat plus Window, so each second
	// allowed ahead is a second more that every proof may be held (FAPI
	// 2.0 asks servers to allow at least 10 s).
	maxDPoPAhead = 10 * time.Second
	// maxProofBytes bounds the DPoP header: a proof with an RSA-4096 key
	// is under 2 KiB.
	maxProofBytes = 8 << 10
	// maxJTIBytes bounds a proof's jti (RFC 9449 asks for 96 bits of
	// randomness: 16 base64url characters; clients send UUIDs).
	maxJTIBytes = 256
	// maxThumbprintBytes bounds a token's cnf.jkt: an RFC 7638 SHA-256
	// thumbprint is 43 base64url characters.
	maxThumbprintBytes = 64
	// minRSABits and maxRSABits bound an RSA proof key: a short one is
	// weak, a long one costs every verification more.
	minRSABits = 2048
	maxRSABits = 8192
	// nonceEpoch is how long a server nonce is handed out; it is
	// accepted for one epoch more.
	nonceEpoch = 5 * time.Minute
	// minNonceKeyBytes is the shortest DPoPConfig.NonceKey.
	minNonceKeyBytes = 32
)

// dpopChecker checks DPoP proofs for a ResourceServer.
type dpopChecker struct {
	required bool
	algs     []string
	algsAttr string        // algs, space-separated, for challenges
	window   time.Duration // how long after its iat a proof is taken
	ahead    time.Duration // how far ahead of now its iat may be
	nonceKey []byte
	replay   func(ctx context.Context, digest string, ttl time.Duration) (bool, error)
	seen     *replayCache // when replay is nil
	now      func() time.Time
	parser   *jwt.Parser
	htu      string // the resource's URI, normalized (normalizeHTU)
}

// newDPoPChecker checks cfg; resource is Config.Resource.
func newDPoPChecker(cfg *DPoPConfig, resource string) (*dpopChecker, error) {
	algs, err := allowedAlgorithms(cfg.Algorithms, "DPoP algorithm")
	if err != nil {
		return nil, err
	}
	if cfg.NonceKey != nil && len(cfg.NonceKey) < minNonceKeyBytes {
		return nil, fmt.Errorf("auth: DPoPConfig.NonceKey must be at least %d bytes", minNonceKeyBytes)
	}
	htu, ok := normalizeHTU(resource)
	if !ok {
		return nil, fmt.Errorf("auth: Config.Resource %q: not a URI a DPoP proof can name", resource)
	}
	d := &dpopChecker{
		required: cfg.Required,
		algs:     slices.Clone(algs),
		algsAttr: strings.Join(algs, " "),
		window:   cfg.Window,
		nonceKey: slices.Clone(cfg.NonceKey),
		replay:   cfg.Replay,
		now:      cfg.now,
		// The claims (iat, and no exp) are checked by check; the algorithm
		// by proofKey, before any key work.
		parser: jwt.NewParser(jwt.WithoutClaimsValidation()),
		htu:    htu,
	}
	if d.window <= 0 {
		d.window = defaultDPoPWindow
	}
	d.ahead = min(d.window, maxDPoPAhead)
	if d.now == nil {
		d.now = time.Now
	}
	if d.replay == nil {
		size := cfg.CacheSize
		if size <= 0 {
			size = defaultDPoPCacheSize
		}
		d.seen = newReplayCache(size)
	}
	return d, nil
}

// proof is what a verified DPoP proof says.
type proof struct {
	jkt   string    // the RFC 7638 thumbprint of its key
	jti   string    // its id
	ath   string    // the access token's hash it names
	iat   time.Time // when it was made
	nonce string    // the server nonce it carries, "" without
}

// proofError is a refused proof: invalid_dpop_proof, with what failed.
func proofError(desc string) *Error {
	return &Error{Reason: ReasonInvalidDPoPProof, Description: desc}
}

// check verifies r's DPoP proof, alone (RFC 9449 §4.3 steps 1 to 11): bind
// checks it against the token, then records its jti.
func (d *dpopChecker) check(r *http.Request) (*proof, error) {
	values := r.Header.Values("DPoP")
	switch {
	case len(values) == 0:
		return nil, proofError("the request has no DPoP proof")
	case len(values) > 1:
		return nil, proofError("more than one DPoP header")
	case len(values[0]) > maxProofBytes:
		return nil, proofError("DPoP proof too long")
	}
	var jkt string
	var keyErr *Error
	claims := jwt.MapClaims{}
	_, err := d.parser.ParseWithClaims(values[0], claims, func(t *jwt.Token) (any, error) {
		key, thumb, e := d.proofKey(t)
		keyErr, jkt = e, thumb
		if e != nil {
			return nil, e
		}
		return key, nil
	})
	switch {
	case keyErr != nil:
		return nil, keyErr
	case err != nil:
		// Not a JWT, or a signature that is not the key's.
		return nil, &Error{Reason: ReasonInvalidDPoPProof, Description: "the DPoP proof is not a JWT signed by its jwk", Err: err}
	}
	p := &proof{jkt: jkt}
	var ok bool
	if p.jti, ok = claims["jti"].(string); !ok || p.jti == "" || len(p.jti) > maxJTIBytes {
		return nil, proofError("the DPoP proof's jti is missing or malformed")
	}
	if htm, _ := claims["htm"].(string); htm != r.Method {
		return nil, proofError("the DPoP proof's htm is not the request's method")
	}
	htu, _ := claims["htu"].(string)
	if n, ok := normalizeHTU(htu); !ok || n != d.htu {
		return nil, proofError("the DPoP proof's htu is not the resource's URI")
	}
	iat, ok := claims["iat"].(float64)
	if !ok {
		return nil, proofError("the DPoP proof's iat is missing or not a number")
	}
	p.iat = unixFloat(iat)
	if now := d.now(); p.iat.Before(now.Add(-d.window)) || p.iat.After(now.Add(d.ahead)) {
		return nil, proofError("the DPoP proof's iat is outside the accepted window")
	}
	if p.ath, ok = claims["ath"].(string); !ok || p.ath == "" {
		return nil, proofError("the DPoP proof has no ath")
	}
	if d.nonceKey != nil {
		p.nonce, _ = claims["nonce"].(string)
		if !d.validNonce(p.nonce, d.now()) {
			return nil, &Error{Reason: ReasonUseDPoPNonce, Description: "the DPoP proof must carry the server's nonce (DPoP-Nonce)"}
		}
	}
	return p, nil
}

// proofKey checks a proof's header (typ, crit, alg in the allowlist, a
// public jwk) and returns its key and the key's thumbprint.
func (d *dpopChecker) proofKey(t *jwt.Token) (any, string, *Error) {
	if typ, _ := t.Header["typ"].(string); !strings.EqualFold(typ, "dpop+jwt") {
		return nil, "", proofError("the DPoP proof's typ is not dpop+jwt")
	}
	if _, ok := t.Header["crit"]; ok {
		return nil, "", proofError("the DPoP proof has critical header extensions (crit), none of which are supported")
	}
	if alg, _ := t.Header["alg"].(string); !slices.Contains(d.algs, alg) || t.Method == nil || t.Method.Alg() != alg {
		return nil, "", proofError("the DPoP proof's alg is not an accepted asymmetric algorithm")
	}
	m, ok := t.Header["jwk"].(map[string]any)
	if !ok {
		return nil, "", proofError("the DPoP proof has no jwk")
	}
	for _, private := range []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"} {
		if _, ok := m[private]; ok {
			return nil, "", proofError("the DPoP proof's jwk holds a private key")
		}
	}
	str := func(name string) string { s, _ := m[name].(string); return s }
	// Only the members of a public key: an x5u is never fetched.
	pub := jwkset.JWKMarshal{
		KTY: jwkset.KTY(str("kty")), CRV: jwkset.CRV(str("crv")),
		X: str("x"), Y: str("y"), N: str("n"), E: str("e"),
	}
	switch pub.KTY {
	case jwkset.KtyEC, jwkset.KtyRSA, jwkset.KtyOKP:
	default:
		return nil, "", proofError("the DPoP proof's jwk is not an asymmetric public key")
	}
	jwk, err := jwkset.NewJWKFromMarshal(pub, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
	if err != nil {
		return nil, "", &Error{Reason: ReasonInvalidDPoPProof, Description: "the DPoP proof's jwk is malformed", Err: err}
	}
	key := jwk.Key()
	if k, ok := key.(*rsa.PublicKey); ok && (k.N.BitLen() < minRSABits || k.N.BitLen() > maxRSABits) {
		return nil, "", proofError("the DPoP proof's RSA key is shorter than 2048 or longer than 8192 bits")
	}
	jkt, err := thumbprint(jwk.Marshal())
	if err != nil {
		return nil, "", &Error{Reason: ReasonInvalidDPoPProof, Description: "the DPoP proof's jwk is malformed", Err: err}
	}
	return key, jkt, nil
}

// thumbprint returns the RFC 7638 SHA-256 thumbprint of a public key: the
// hash of its required members, in lexicographic order, without spaces,
// base64url-encoded.
func thumbprint(m jwkset.JWKMarshal) (string, error) {
	var members any
	switch m.KTY {
	case jwkset.KtyEC:
		members = struct {
			Crv string `json:"crv"`
			Kty string `json:"kty"`
			X   string `json:"x"`
			Y   string `json:"y"`
		}{string(m.CRV), string(m.KTY), m.X, m.Y}
	case jwkset.KtyRSA:
		members = struct {
			E   string `json:"e"`
			Kty string `json:"kty"`
			N   string `json:"n"`
		}{m.E, string(m.KTY), m.N}
	case jwkset.KtyOKP:
		members = struct {
			Crv string `json:"crv"`
			Kty string `json:"kty"`
			X   string `json:"x"`
		}{string(m.CRV), string(m.KTY), m.X}
	default:
		return "", errors.New("auth: no thumbprint for this key type")
	}
	b, err := json.Marshal(members)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// bind checks a verified proof against the access token and its principal
// (RFC 9449 §4.3 step 12: ath, and the token's cnf.jkt), then records its
// jti, accepted once within its window.
func (d *dpopChecker) bind(ctx context.Context, pf *proof, token string, p *auth.Principal) error {
	sum := sha256.Sum256([]byte(token))
	if pf.ath != base64.RawURLEncoding.EncodeToString(sum[:]) {
		return proofError("the DPoP proof's ath is not the access token's hash")
	}
	if p.KeyThumbprint == "" {
		return &Error{Reason: ReasonInvalidToken, Description: "the token is not DPoP-bound: present it as a Bearer token"}
	}
	if subtle.ConstantTimeCompare([]byte(p.KeyThumbprint), []byte(pf.jkt)) != 1 {
		return &Error{Reason: ReasonInvalidToken, Description: "the token is bound to another key than the DPoP proof's"}
	}
	// The digest names the key and the jti, length-prefixed; one key's
	// jti never collides with another's.
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(pf.jkt)))
	h.Write(n[:])
	h.Write([]byte(pf.jkt))
	h.Write([]byte(pf.jti))
	var k [sha256.Size]byte
	h.Sum(k[:0])
	now := d.now()
	until := pf.iat.Add(d.window + time.Second)
	if d.replay == nil {
		switch d.seen.use(k, p.Key(), pf.jkt, now, until) {
		case replayUsed:
			return proofError("the DPoP proof was used before")
		case replayShare:
			return &Error{Reason: ReasonVerifierBusy, Description: "this client holds its share of the DPoP proofs remembered: try again later"}
		case replayFull:
			return &Error{Reason: ReasonVerifierBusy, Description: "too many DPoP proofs to remember: try again later"}
		}
		return nil
	}
	first, err := d.replay(ctx, hex.EncodeToString(k[:]), until.Sub(now))
	switch {
	case err != nil:
		return &Error{Reason: ReasonVerifierError, Description: "cannot record the DPoP proof now", Err: err}
	case !first:
		return proofError("the DPoP proof was used before")
	}
	return nil
}

// nonceAt returns the nonce of an epoch: the epoch and a MAC of it under
// the nonce key, base64url-encoded (characters RFC 9449's NQCHAR allows).
func (d *dpopChecker) nonceAt(epoch int64) string {
	var b [8 + 16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(epoch))
	mac := hmac.New(sha256.New, d.nonceKey)
	mac.Write(b[:8])
	copy(b[8:], mac.Sum(nil))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// nonce returns the nonce handed out now.
func (d *dpopChecker) nonce(now time.Time) string {
	return d.nonceAt(now.Unix() / int64(nonceEpoch/time.Second))
}

// validNonce reports whether n is the nonce of now's epoch or the one
// before.
func (d *dpopChecker) validNonce(n string, now time.Time) bool {
	e := now.Unix() / int64(nonceEpoch/time.Second)
	return subtle.ConstantTimeCompare([]byte(n), []byte(d.nonceAt(e))) == 1 ||
		subtle.ConstantTimeCompare([]byte(n), []byte(d.nonceAt(e-1))) == 1
}

// normalizeHTU returns u as RFC 9449 §4.3 compares an htu: without query
// and fragment, after RFC 3986 §6.2.2 and §6.2.3 normalization (scheme
// and host in lowercase, no default port, an empty path as "/", the path's
// percent-encoding made canonical); false for what is not an absolute
// http(s) URI.
func normalizeHTU(u string) (string, bool) {
	p, err := url.Parse(u)
	if err != nil || p.Opaque != "" || p.User != nil || p.Host == "" {
		return "", false
	}
	scheme := strings.ToLower(p.Scheme)
	host, port := strings.ToLower(p.Hostname()), p.Port()
	switch {
	case scheme == "https" && port == "443", scheme == "http" && port == "80":
		port = ""
	case scheme != "https" && scheme != "http":
		return "", false
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	path := p.Path
	if path == "" {
		path = "/"
	}
	return scheme + "://" + host + (&url.URL{Path: path}).EscapedPath(), true
}
