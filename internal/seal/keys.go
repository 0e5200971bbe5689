package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"sync"
)

// MinKeyBytes is the shortest cluster key New accepts.
const MinKeyBytes = 32

// TagSize is the size of a MAC tag.
const TagSize = sha256.Size

// ErrInvalid is returned for what fails authentication: altered, forged,
// sealed under another key, or truncated.
var ErrInvalid = errors.New("seal: authentication failed")

// Keys holds the current cluster key and, during a rotation, the previous
// one: it signs and seals with the current key and accepts either. Its
// methods are safe for concurrent use.
type Keys struct {
	sets []*keySet // current first
}

type keySet struct {
	macs sync.Pool // of *macState, HMAC-SHA256 under the MAC key
	aead cipher.AEAD
}

// macState is a MAC in the making: the hash, the parts it will hash, the
// tag.
type macState struct {
	h   hash.Hash
	buf []byte
	sum [TagSize]byte
}

// maxMACScratch is the largest scratch buffer a macState keeps.
const maxMACScratch = 64 << 10

// New derives the keys of current and, when previous is not empty, of
// previous. Each must be at least MinKeyBytes long: give random bytes
// (such as `openssl rand -base64 48`), never a password.
func New(current, previous []byte) (*Keys, error) {
	k := &Keys{}
	for i, secret := range [][]byte{current, previous} {
		if i == 1 && len(secret) == 0 {
			break
		}
		if len(secret) < MinKeyBytes {
			return nil, fmt.Errorf("seal: a cluster key must be at least %d bytes, this one has %d", MinKeyBytes, len(secret))
		}
		set, err := derive(secret)
		if err != nil {
			return nil, err
		}
		k.sets = append(k.sets, set)
	}
	return k, nil
}

func derive(secret []byte) (*keySet, error) {
	macKey, err := hkdf.Key(sha256.New, secret, nil, "vigil seal mac v1", 32)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	encKey, err := hkdf.Key(sha256.New, secret, nil, "vigil seal aead v1", 32)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	block, err := aes.NewCipher(encKey)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	set := &keySet{aead: aead}
	set.macs.New = func() any { return &macState{h: hmac.New(sha256.New, macKey)} }
	return set, nil
}

// appendPart appends p to b prefixed with its length, so that no two lists
// of parts share a tag.
func appendPart[T string | []byte](b []byte, p T) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
	return append(b, p...)
}

// mac appends to dst the tag of parts under set.
func (set *keySet) mac(dst []byte, parts [][]byte) []byte {
	st := set.macs.Get().(*macState)
	for _, p := range parts {
		st.buf = appendPart(st.buf, p)
	}
	return set.sum(st, dst)
}

// sum appends to dst the tag of what st holds, and puts st back.
func (set *keySet) sum(st *macState, dst []byte) []byte {
	st.h.Reset()
	st.h.Write(st.buf)
	dst = append(dst, st.h.Sum(st.sum[:0])...)
	st.buf = st.buf[:0]
	if cap(st.buf) > maxMACScratch {
		st.buf = nil
	}
	set.macs.Put(st)
	return dst
}

// MAC appends to dst the TagSize-byte tag of parts under the current key.
func (k *Keys) MAC(dst []byte, parts ...[]byte) []byte { return k.sets[0].mac(dst, parts) }

// Name appends to dst the tag MAC gives the parts label and v, without
// copying them: a name that tells nothing of v without the key, the same
// for the same v on every replica.
func (k *Keys) Name(dst []byte, label, v string) []byte {
	set := k.sets[0]
	st := set.macs.Get().(*macState)
	st.buf = appendPart(appendPart(st.buf, label), v)
	return set.sum(st, dst)
}

// Verify reports whether tag is the tag of parts under the current or the
// previous key.
func (k *Keys) Verify(tag []byte, parts ...[]byte) bool {
	if len(tag) != TagSize {
		return false
	}
	var buf [TagSize]byte
	for _, set := range k.sets {
		if hmac.Equal(tag, set.mac(buf[:0], parts)) {
			return true
		}
	}
	return false
}

// Overhead is how much longer Seal makes a plaintext.
const Overhead = 12 + 16

// Seal appends to dst plaintext encrypted and authenticated under the
// current key, with ad (which is not stored) authenticated too: a random
// nonce, then the ciphertext and its tag.
func (k *Keys) Seal(dst, plaintext, ad []byte) []byte {
	aead := k.sets[0].aead
	start := len(dst)
	dst = append(dst, make([]byte, aead.NonceSize())...)
	nonce := dst[start:]
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	return aead.Seal(dst, nonce, plaintext, ad)
}

// Open appends to dst the plaintext of sealed, which Seal made with the
// same ad under the current or the previous key, or returns ErrInvalid.
func (k *Keys) Open(dst, sealed, ad []byte) ([]byte, error) {
	for _, set := range k.sets {
		n := set.aead.NonceSize()
		if len(sealed) < n+set.aead.Overhead() {
			return dst, ErrInvalid
		}
		out, err := set.aead.Open(dst, sealed[:n], sealed[n:], ad)
		if err == nil {
			return out, nil
		}
	}
	return dst, ErrInvalid
}
