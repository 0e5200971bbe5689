// Package accounts is the gateway's token vault: the OAuth tokens each
// principal (a caller of the gateway's own authorization) obtained from an
// upstream's authorization server, kept per (principal, upstream), so that
// a call of alice's is sent upstream as alice and never as anyone else.
//
// A [Vault] hands out a valid access token for a (principal, upstream)
// ([Vault.Token]), refreshing it with its refresh token before it expires
// (when less than a tenth of its lifetime or a minute is left) and storing
// the refresh token the authorization server rotated in; one refresh at a
// time per entry across replicas (a lease in the [Store]): the others wait
// for it, at most a bounded time, and read its result. A refresh the
// authorization server refuses (invalid_grant), an entry that is missing,
// or an expired one without a refresh token are [ErrAuthorize]: the user
// must authorize again, and the entry is gone. [Vault.Renew] refreshes at
// once a token an upstream refused (HTTP 401), [Vault.Forget] drops an
// entry without revoking it. [Vault.Save] stores the
// tokens of a completed authorization, [Vault.Disconnect] removes an entry
// and revokes its tokens at the authorization server (RFC 7009) when it
// has a revocation endpoint, [Vault.Connections] lists a principal's
// connections without their tokens.
//
// # Where the client's secret lives
//
// The vault is an OAuth client of each upstream's authorization server:
// [VaultConfig].Clients gives, by upstream name, the [Client] (token and
// revocation endpoints, client id and secret, RFC 8707 resource, scopes),
// from the operator's flags at start. The [Store] holds the tokens only,
// never the client's secret; [Vault.Save] takes the token alone. An entry
// remembers the token endpoint and the resource it was obtained for: a
// refresh goes to that endpoint for that resource, and an entry whose
// upstream's client now names another endpoint or resource is dropped
// (authorize again) rather than sent elsewhere.
//
// # Stores
//
// [NewMemoryStore] keeps the entries in the process (one replica).
// redisshare's AccountStore keeps them on Redis for every replica, each
// entry sealed (AES-256-GCM, bound to its principal and upstream) under
// the cluster key and named by a keyed hash of the principal: Redis never
// sees a token, nor whose it is. A Store deals in opaque bytes, so that a
// Store of another package needs nothing of this one.
//
// # What never shows a token
//
// Tokens never reach logs (at any level), errors, spans or metric labels:
// the vault's errors name the upstream and the reason, never a token or
// the authorization server's error description, and the type that holds
// tokens prints and logs itself redacted.
package accounts
