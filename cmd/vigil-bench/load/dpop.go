package main

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// dpopSigner mints a DPoP proof (RFC 9449) for each request, with one
// client key: what a DPoP client does besides sending its token.
type dpopSigner struct {
	key *ecdsa.PrivateKey
	jwk map[string]any
	n   atomic.Uint64 // makes each jti unique
}

// readDPoPKey reads a PEM PKCS #8 P-256 key; nil for "".
func readDPoPKey(path string) (*dpopSigner, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New(path + ": not an ECDSA key")
	}
	pub, err := key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		return nil, err
	}
	b64 := base64.RawURLEncoding.EncodeToString
	return &dpopSigner{key: key, jwk: map[string]any{"kty": "EC", "crv": "P-256", "x": b64(pub[1:33]), "y": b64(pub[33:])}}, nil
}

// authorize sets req's Authorization (the DPoP scheme) and DPoP headers
// for token.
func (s *dpopSigner) authorize(req *http.Request, token string) error {
	ath := sha256.Sum256([]byte(token))
	htu := req.URL.Scheme + "://" + req.URL.Host + req.URL.EscapedPath()
	t := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"jti": "load-" + strconv.FormatUint(s.n.Add(1), 36) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"htm": req.Method,
		"htu": htu,
		"iat": time.Now().Unix(),
		"ath": base64.RawURLEncoding.EncodeToString(ath[:]),
	})
	t.Header["typ"], t.Header["jwk"] = "dpop+jwt", s.jwk
	proof, err := t.SignedString(s.key)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "DPoP "+token)
	req.Header.Set("DPoP", proof)
	return nil
}
