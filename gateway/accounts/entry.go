package accounts

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// secret is a token: it prints, logs and marshals itself redacted, so
// that no formatting of an entry shows one. Only string(s) reads it.
type secret string

const redacted = "[REDACTED]"

// String returns a redaction.
func (secret) String() string { return redacted }

// GoString returns a redaction (for %#v).
func (secret) GoString() string { return redacted }

// Format prints a redaction, whatever the verb.
func (secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// LogValue logs a redaction.
func (secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON marshals a redaction: an entry is encoded by encode only.
func (secret) MarshalJSON() ([]byte, error) { return json.Marshal(redacted) }

// entry is what the vault keeps of one (principal, upstream): the tokens,
// when they were obtained and expire, and where they were obtained.
type entry struct {
	access, refresh secret
	tokenType       string
	expiry          time.Time // zero: the AS did not say
	issued          time.Time // the access token's: its lifetime runs from it to expiry
	obtained        time.Time // the authorization
	scopes          []string
	tokenURL        string // the token endpoint they came from
	resource        string // the resource they were issued for
}

// LogValue logs what an entry tells without its tokens.
func (e entry) LogValue() slog.Value {
	return slog.GroupValue(slog.Time("expiry", e.expiry), slog.Time("obtained", e.obtained),
		slog.Bool("refreshable", e.refresh != ""))
}

// String describes an entry without its tokens.
func (e entry) String() string {
	return fmt.Sprintf("entry{expiry %s, obtained %s, refreshable %t}", e.expiry.Format(time.RFC3339), e.obtained.Format(time.RFC3339), e.refresh != "")
}

// Format prints String, whatever the verb (%#v would print the fields).
func (e entry) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(e.String())) }

// wire is an entry as the Store holds it.
type wire struct {
	Access    string    `json:"a"`
	Refresh   string    `json:"r,omitempty"`
	TokenType string    `json:"t,omitempty"`
	Expiry    time.Time `json:"e,omitzero"`
	Issued    time.Time `json:"i"`
	Obtained  time.Time `json:"o"`
	Scopes    []string  `json:"s,omitempty"`
	TokenURL  string    `json:"u"`
	Resource  string    `json:"res,omitempty"`
}

// Bounds of what an authorization server's answer may put in an entry.
const (
	maxTokenBytes = 16 << 10
	maxScopes     = 64
	maxScopeBytes = 4 << 10
)

// errEntryTooLarge is an answer whose tokens or scopes break the bounds.
var errEntryTooLarge = errors.New("accounts: the authorization server's token is over the vault's bounds")

// check returns errEntryTooLarge when e breaks the bounds.
func (e *entry) check() error {
	n := 0
	for _, s := range e.scopes {
		n += len(s)
	}
	if len(e.access) > maxTokenBytes || len(e.refresh) > maxTokenBytes || len(e.tokenType) > 64 ||
		len(e.scopes) > maxScopes || n > maxScopeBytes {
		return errEntryTooLarge
	}
	return nil
}

// encode returns e as the Store holds it.
func (e *entry) encode() []byte {
	b, _ := json.Marshal(wire{ // a wire always marshals
		Access: string(e.access), Refresh: string(e.refresh), TokenType: e.tokenType,
		Expiry: e.expiry, Issued: e.issued, Obtained: e.obtained, Scopes: e.scopes, TokenURL: e.tokenURL, Resource: e.resource,
	})
	return b
}

// decode returns the entry data holds.
func decode(data []byte) (*entry, error) {
	var w wire
	if err := json.Unmarshal(data, &w); err != nil || w.Access == "" {
		return nil, errors.New("accounts: the Store holds an entry that does not decode")
	}
	return &entry{
		access: secret(w.Access), refresh: secret(w.Refresh), tokenType: w.TokenType,
		expiry: w.Expiry, issued: w.Issued, obtained: w.Obtained, scopes: w.Scopes, tokenURL: w.TokenURL, resource: w.Resource,
	}, nil
}

// fromToken returns the entry of tok, obtained at now from c.
func fromToken(tok *oauth2.Token, c *Client, now time.Time) *entry {
	return &entry{
		access: secret(tok.AccessToken), refresh: secret(tok.RefreshToken), tokenType: tok.Type(),
		expiry: expiry(tok, now), issued: now, obtained: now, scopes: grantedScopes(tok, c), tokenURL: c.TokenURL, resource: c.Resource,
	}
}

// grantedScopes returns the scopes tok says were granted (the answer's
// "scope"), else those asked.
func grantedScopes(tok *oauth2.Token, c *Client) []string {
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		return strings.Fields(s)
	}
	return c.Scopes
}
