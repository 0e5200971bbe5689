package redisstore

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/vigil-mcp/vigil/internal/seal"
)

// replayWindow is how far from a replica's clock a relay's stamp may be,
// either way: the clock skew between replicas plus Redis's delay. A relay
// is admitted once within it.
const replayWindow = 30 * time.Second

// replayMemory bounds the nonces a Store remembers: each costs a map entry,
// so the bound holds the memory; past it the oldest are forgotten and
// relays as old are refused as stale (see seal.Replay).
const replayMemory = 1 << 20

// The domain labels: the first part of every authenticated data, so that
// the key never authenticates a relay as a record or an event.
const (
	domainRelay  = "relay"
	domainRecord = "record"
	domainEvent  = "event"
	domainName   = "name"
)

// ad returns the authenticated data of parts, each prefixed with its
// length so that no two lists of parts share it.
func ad(parts ...string) []byte {
	n := 0
	for _, p := range parts {
		n += 4 + len(p)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

// refuse counts a refusal and logs it at Debug.
func (s *Store) refuse(reason, key string) {
	if s.cfg.refused != nil {
		s.cfg.refused(reason)
	}
	s.cfg.logger.Debug("redisstore: refused what Redis holds or relays", "reason", reason, "key", key)
}

// stamp returns r as published on channel ch: stamped and sealed under
// the cluster key, bound to ch. The relay's kind and sender are in the
// sealed payload (encodeRelay), so they are authenticated and hidden too.
func (s *Store) stamp(ch string, r []byte) []byte {
	return s.keys.Stamp(make([]byte, 0, len(r)+seal.StampOverhead), r, ad(domainRelay, ch), time.Now())
}

// sealField seals a record's field of session id.
func (s *Store) sealField(id, field string, v []byte) []byte {
	return s.keys.Seal(make([]byte, 0, len(v)+seal.Overhead), v, ad(domainRecord, id, field))
}

// openField opens a record's field of session id.
func (s *Store) openField(id, field, v string) ([]byte, error) {
	return s.keys.Open(nil, []byte(v), ad(domainRecord, id, field))
}

// appendTag appends to b the tag of session id that Redis sees in its
// keys and channels: its SHA-256 in base64url. A session id is 128 random
// bits, so the tag tells nothing of it, and presenting the tag as an id
// names another session. Unkeyed, it is the same under every cluster key:
// sessions survive a rotation.
func appendTag(b []byte, id string) []byte {
	var in [96]byte
	sum := sha256.Sum256(append(append(in[:0], "vigil session\n"...), id...))
	return base64.RawURLEncoding.AppendEncode(b, sum[:])
}

// streamTag returns what Redis sees of a stream's (or a claim's) name in
// the session's keys and sets: its SHA-256 in base64url. A stream's name
// holds the request id the client chose, which may be anything; the tag
// shows nothing of it that cannot be guessed. Unkeyed, like the session's
// tag: a session's events survive a rotation of the cluster key.
func streamTag(name string) string {
	var in [128]byte
	sum := sha256.Sum256(append(append(in[:0], "vigil stream\n"...), name...))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Pseudonym returns prefix followed by what Redis may see of v, which can
// be guessed (a principal, a rate-limit key) or must not be readable (a
// session id in a set): its HMAC-SHA256 under the current cluster key, in
// base64url. Equal values have equal pseudonyms on every replica; without
// the key, nothing of v can be learned or tested from it.
func (s *Store) Pseudonym(prefix, v string) string {
	var buf [128]byte
	var tag [seal.TagSize]byte
	b := append(buf[:0], prefix...)
	return string(base64.RawURLEncoding.AppendEncode(b, s.keys.Name(tag[:0], domainName, v)))
}
