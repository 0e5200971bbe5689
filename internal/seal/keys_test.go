package seal

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	keyA = []byte(strings.Repeat("a", MinKeyBytes))
	keyB = []byte(strings.Repeat("b", MinKeyBytes))
)

func mustKeys(t testing.TB, cur, prev []byte) *Keys {
	t.Helper()
	k, err := New(cur, prev)
	require.NoError(t, err)
	return k
}

func TestNewRefusesShortKeys(t *testing.T) {
	_, err := New(keyA[:MinKeyBytes-1], nil)
	require.ErrorContains(t, err, "at least 32 bytes")
	_, err = New(keyA, keyB[:10])
	require.ErrorContains(t, err, "this one has 10")
	_, err = New(keyA, nil)
	require.NoError(t, err)
}

func TestMACBindsEveryPartAndItsBounds(t *testing.T) {
	k := mustKeys(t, keyA, nil)
	tag := k.MAC(nil, []byte("ab"), []byte("c"))
	require.Len(t, tag, TagSize)
	require.Equal(t, tag, k.Name(nil, "ab", "c"), "Name is MAC of two parts")
	require.NotEqual(t, tag, mustKeys(t, keyB, nil).Name(nil, "ab", "c"), "another key, another name")
	require.True(t, k.Verify(tag, []byte("ab"), []byte("c")))
	require.False(t, k.Verify(tag, []byte("a"), []byte("bc")), "moving a byte between parts changes the tag")
	require.False(t, k.Verify(tag, []byte("ab"), []byte("d")))
	require.False(t, k.Verify(tag[:TagSize-1], []byte("ab"), []byte("c")))
	require.False(t, mustKeys(t, keyB, nil).Verify(tag, []byte("ab"), []byte("c")), "another key")
}

func TestRotationAcceptsThePreviousKey(t *testing.T) {
	old := mustKeys(t, keyA, nil)
	rotated := mustKeys(t, keyB, keyA)
	done := mustKeys(t, keyB, nil)
	tag := old.MAC(nil, []byte("m"))
	sealed := old.Seal(nil, []byte("secret"), []byte("ad"))

	require.True(t, rotated.Verify(tag, []byte("m")))
	pt, err := rotated.Open(nil, sealed, []byte("ad"))
	require.NoError(t, err)
	require.Equal(t, "secret", string(pt))

	require.False(t, done.Verify(tag, []byte("m")), "once the old key is dropped")
	_, err = done.Open(nil, sealed, []byte("ad"))
	require.ErrorIs(t, err, ErrInvalid)

	// What the rotated keys make, the old process (not yet given the
	// new key) refuses: rotate by adding the new key as previous first.
	require.False(t, old.Verify(rotated.MAC(nil, []byte("m")), []byte("m")))
	staged := mustKeys(t, keyA, keyB)
	require.True(t, staged.Verify(rotated.MAC(nil, []byte("m")), []byte("m")))
}

func TestSealHidesAndBinds(t *testing.T) {
	k := mustKeys(t, keyA, nil)
	plain := []byte("the tool result nobody else may read")
	sealed := k.Seal([]byte("prefix"), plain, []byte("session-1"))
	require.True(t, bytes.HasPrefix(sealed, []byte("prefix")))
	sealed = sealed[len("prefix"):]
	require.Len(t, sealed, len(plain)+Overhead)
	require.False(t, bytes.Contains(sealed, []byte("tool result")))
	require.NotEqual(t, sealed, k.Seal(nil, plain, []byte("session-1")), "a fresh nonce each time")

	out, err := k.Open(nil, sealed, []byte("session-1"))
	require.NoError(t, err)
	require.Equal(t, plain, out)

	_, err = k.Open(nil, sealed, []byte("session-2"))
	require.ErrorIs(t, err, ErrInvalid, "moved to another session")
	for i := range sealed {
		bad := bytes.Clone(sealed)
		bad[i] ^= 1
		_, err = k.Open(nil, bad, []byte("session-1"))
		require.ErrorIs(t, err, ErrInvalid, "byte %d flipped", i)
	}
	_, err = k.Open(nil, sealed[:Overhead-1], nil)
	require.ErrorIs(t, err, ErrInvalid)
}

func TestStampRoundTripAndTamper(t *testing.T) {
	k := mustKeys(t, keyA, nil)
	now := time.UnixMilli(1_790_000_000_123)
	msg := k.Stamp(nil, []byte("payload"), []byte("chan"), now)
	require.Len(t, msg, len("payload")+StampOverhead)
	require.NotContains(t, string(msg), "payload", "a stamped message is sealed, not only signed")
	p, st, err := k.Unstamp(msg, []byte("chan"))
	require.NoError(t, err)
	require.Equal(t, "payload", string(p))
	require.True(t, st.Time.Equal(now))
	_, st2, err := k.Unstamp(k.Stamp(nil, []byte("payload"), []byte("chan"), now), []byte("chan"))
	require.NoError(t, err)
	require.NotEqual(t, st.Nonce, st2.Nonce)

	_, _, err = k.Unstamp(msg, []byte("other"))
	require.ErrorIs(t, err, ErrInvalid)
	for i := range msg {
		bad := bytes.Clone(msg)
		bad[i] ^= 0x80
		_, _, err = k.Unstamp(bad, []byte("chan"))
		require.ErrorIs(t, err, ErrInvalid, "byte %d flipped", i)
	}
	_, _, err = k.Unstamp(msg[:StampOverhead-1], []byte("chan"))
	require.ErrorIs(t, err, ErrInvalid)
}

func BenchmarkStampUnstamp(b *testing.B) {
	k := mustKeys(b, keyA, nil)
	payload := bytes.Repeat([]byte("x"), 256)
	ad := []byte("vigil:{session}:r")
	buf := make([]byte, 0, 512)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		msg := k.Stamp(buf[:0], payload, ad, now)
		if _, _, err := k.Unstamp(msg, ad); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSealOpen(b *testing.B) {
	k := mustKeys(b, keyA, nil)
	payload := bytes.Repeat([]byte("x"), 1024)
	ad := []byte("session")
	buf := make([]byte, 0, 2048)
	out := make([]byte, 0, 2048)
	b.ReportAllocs()
	for b.Loop() {
		s := k.Seal(buf[:0], payload, ad)
		if _, err := k.Open(out[:0], s, ad); err != nil {
			b.Fatal(err)
		}
	}
}
