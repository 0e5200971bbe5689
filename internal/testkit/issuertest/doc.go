// Package issuertest runs an authorization server for tests that need a
// vigil guarded by tokens without the real one (oidc-provider): on a free
// loopback port, it serves its metadata (RFC 8414) and its JWK Set, and
// signs RS256 JWT access tokens for any subject and resource.
package issuertest
