package seal

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func stampAt(t time.Time, n byte) Stamp {
	st := Stamp{Time: t}
	st.Nonce[0] = n
	return st
}

func TestReplayAdmitsOnceWhileFresh(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	r := NewReplay(time.Minute, 100)
	require.NoError(t, r.Admit(now, stampAt(now, 1)))
	require.ErrorIs(t, r.Admit(now, stampAt(now, 1)), ErrReplayed)
	require.ErrorIs(t, r.Admit(now.Add(59*time.Second), stampAt(now, 1)), ErrReplayed, "still in the window")
	require.NoError(t, r.Admit(now, stampAt(now, 2)))

	require.ErrorIs(t, r.Admit(now, stampAt(now.Add(-61*time.Second), 3)), ErrStale)
	require.ErrorIs(t, r.Admit(now, stampAt(now.Add(61*time.Second), 3)), ErrStale, "from the future")
	require.ErrorIs(t, r.Admit(now.Add(61*time.Second), stampAt(now, 1)), ErrStale, "out of the window: stale, never admitted again")

	// A sender whose clock is ahead by less than the window is admitted,
	// and its nonce remembered as long as its stamp is fresh.
	ahead := now.Add(50 * time.Second)
	require.NoError(t, r.Admit(now, stampAt(ahead, 4)))
	require.ErrorIs(t, r.Admit(now.Add(100*time.Second), stampAt(ahead, 4)), ErrReplayed)
}

func TestReplayForgetsOldGroupsAndStaysBounded(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	r := NewReplay(time.Minute, 1000)
	for i := range 200 {
		require.NoError(t, r.Admit(now, stampAt(now.Add(-time.Duration(i)*time.Millisecond), byte(i))))
	}
	later := now.Add(3 * time.Minute)
	require.NoError(t, r.Admit(later, stampAt(later, 1)))
	r.mu.Lock()
	n, groups := r.n, len(r.seen)
	r.mu.Unlock()
	require.Equal(t, 1, n, "groups out of the window are forgotten")
	require.Equal(t, 1, groups)
}

func TestReplayAtCapacityRefusesWhatItForgot(t *testing.T) {
	w := time.Minute
	base := time.Unix(1_790_000_000, 0).Truncate(w)
	now := base.Add(w + w/2) // the window reaches into base's group
	r := NewReplay(w, 3)
	old := stampAt(base.Add(40*time.Second), 1)
	require.NoError(t, r.Admit(now, old))
	for i := range 2 {
		require.NoError(t, r.Admit(now, stampAt(now, byte(10+i))))
	}
	// Full: the oldest group goes, and with it every stamp as old, which
	// is now stale rather than admitted twice.
	require.NoError(t, r.Admit(now, stampAt(now, 20)))
	require.ErrorIs(t, r.Admit(now, old), ErrStale)
	// A group that alone fills the memory refuses the rest as stale.
	require.ErrorIs(t, r.Admit(now, stampAt(now, 21)), ErrStale)
	r.mu.Lock()
	require.LessOrEqual(t, r.n, 3)
	r.mu.Unlock()
}

func TestReplayConcurrentAdmitsEachNonceOnce(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	r := NewReplay(time.Minute, 10_000)
	const workers, nonces = 8, 200
	var admitted [nonces]int
	var mu sync.Mutex
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			<-start
			for i := range nonces {
				st := Stamp{Time: now}
				st.Nonce[0], st.Nonce[1] = byte(i), byte(i>>8)
				if r.Admit(now, st) == nil {
					mu.Lock()
					admitted[i]++
					mu.Unlock()
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i, n := range admitted {
		require.Equal(t, 1, n, "nonce %d", i)
	}
}

func BenchmarkReplayAdmit(b *testing.B) {
	r := NewReplay(30*time.Second, 1<<20)
	now := time.Now()
	var st Stamp
	st.Time = now
	var i uint64
	b.ReportAllocs()
	for b.Loop() {
		i++
		for j := range 8 {
			st.Nonce[j] = byte(i >> (8 * j))
		}
		_ = r.Admit(now, st)
	}
}
