package seal

import (
	"crypto/rand"
	"encoding/binary"
	"time"
)

// NonceSize is the size of a stamp's nonce.
const NonceSize = 16

// StampOverhead is how much longer Stamp makes a payload.
const StampOverhead = 8 + NonceSize + TagSize

// Stamp is when a stamped message was made, and its unique nonce: what
// [Replay] checks.
type Stamp struct {
	Time  time.Time
	Nonce [NonceSize]byte
}

// Stamp appends to dst payload authenticated, with ad (which is not
// stored), under the current key, stamped with now and a random nonce:
// the time in Unix milliseconds (8 bytes), the nonce, the payload, the
// tag. It does not hide the payload.
func (k *Keys) Stamp(dst, payload, ad []byte, now time.Time) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(now.UnixMilli()))
	var nonce [NonceSize]byte
	_, _ = rand.Read(nonce[:]) // crypto/rand.Read never fails
	dst = append(dst, nonce[:]...)
	dst = append(dst, payload...)
	return k.MAC(dst, ad, dst[start:])
}

// Unstamp checks a message Stamp made with the same ad under the current
// or the previous key, and returns its payload (a part of msg) and its
// stamp, or ErrInvalid. Whether the stamp is fresh is [Replay]'s to say.
func (k *Keys) Unstamp(msg, ad []byte) ([]byte, Stamp, error) {
	if len(msg) < StampOverhead {
		return nil, Stamp{}, ErrInvalid
	}
	body, tag := msg[:len(msg)-TagSize], msg[len(msg)-TagSize:]
	if !k.Verify(tag, ad, body) {
		return nil, Stamp{}, ErrInvalid
	}
	var st Stamp
	st.Time = time.UnixMilli(int64(binary.BigEndian.Uint64(body[:8])))
	copy(st.Nonce[:], body[8:8+NonceSize])
	return body[8+NonceSize:], st, nil
}
