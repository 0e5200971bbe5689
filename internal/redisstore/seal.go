package redisstore

import (
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

// stamp returns r as published on channel ch: stamped under the cluster
// key.
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
