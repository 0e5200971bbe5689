package seal

import (
	"crypto/rand"
	"encoding/binary"
	"slices"
	"time"
)

// NonceSize is the size of a stamp's nonce.
const NonceSize = 16

// stampHead is a stamp inside its seal: the time, then the nonce.
const stampHead = 8 + NonceSize

// StampOverhead is how much longer Stamp makes a payload.
const StampOverhead = Overhead + stampHead

// Stamp is when a stamped message was made, and its unique nonce: what
// [Replay] checks.
type Stamp struct {
	Time  time.Time
	Nonce [NonceSize]byte
}

// Stamp appends to dst payload stamped with now and a random nonce, then
// sealed as [Keys.Seal] seals, with ad (which is not stored), under the
// current key: the reader of the message learns neither the payload nor
// the stamp, only the size.
func (k *Keys) Stamp(dst, payload, ad []byte, now time.Time) []byte {
	aead := k.sets[0].aead
	start := len(dst)
	dst = slices.Grow(dst, StampOverhead+len(payload))
	dst = dst[:start+aead.NonceSize()]
	_, _ = rand.Read(dst[start:]) // crypto/rand.Read never fails
	plain := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(now.UnixMilli()))
	var nonce [NonceSize]byte
	_, _ = rand.Read(nonce[:])
	dst = append(dst, nonce[:]...)
	dst = append(dst, payload...)
	// Sealed in place: the ciphertext overwrites the plaintext exactly.
	return aead.Seal(dst[:plain], dst[start:plain], dst[plain:], ad)
}

// Unstamp opens a message Stamp made with the same ad under the current or
// the previous key, and returns its payload (a new slice) and its stamp,
// or ErrInvalid. Whether the stamp is fresh is [Replay]'s to say.
func (k *Keys) Unstamp(msg, ad []byte) ([]byte, Stamp, error) {
	body, err := k.Open(nil, msg, ad)
	if err != nil || len(body) < stampHead {
		return nil, Stamp{}, ErrInvalid
	}
	var st Stamp
	st.Time = time.UnixMilli(int64(binary.BigEndian.Uint64(body[:8])))
	copy(st.Nonce[:], body[8:stampHead])
	return body[stampHead:], st, nil
}
