package gateway

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestViewsMemo: what callers of a key do not see is memoized once each
// view of theirs is listed and still theirs, never from a view that could
// not be listed, and is dropped with any view.
func TestViewsMemo(t *testing.T) {
	listed := func(names ...string) *capsView {
		v := &capsView{ready: make(chan struct{}), names: map[string]bool{}}
		for _, n := range names {
			v.names[n] = true
		}
		close(v.ready)
		return v
	}
	key := capsKey(0) // a caller with none of the capabilities
	lacked := lacks(key)
	base := listed("plain", "sample", "ask")
	views := make([]*capsView, len(lacked))
	for i, a := range lacked {
		views[i] = listed("plain", "sample", "ask")
		if a == keySampling {
			views[i] = listed("plain", "ask")
		}
	}
	var v toolViews
	v.byKey = map[capsKey]*capsView{0: base}
	for i, a := range lacked {
		v.byKey[a] = views[i]
	}

	pending := &capsView{ready: make(chan struct{})}
	v.memoize(key, lacked, pending, views)
	_, ok := v.hiddenFrom(key)
	assert.False(t, ok, "a view still being listed")
	failed := listed()
	failed.names = nil
	v.memoize(key, lacked, base, append([]*capsView{failed}, views[1:]...))
	_, ok = v.hiddenFrom(key)
	assert.False(t, ok, "a view that could not be listed")
	v.memoize(key, lacked, listed("plain"), views)
	_, ok = v.hiddenFrom(key)
	assert.False(t, ok, "a base that is no longer the key's")

	v.memoize(key, lacked, base, views)
	hidden, ok := v.hiddenFrom(key)
	assert.True(t, ok)
	assert.Equal(t, map[string]bool{"sample": true}, hidden, "what base lists and the view without sampling does not")
	_, ok = v.hiddenFrom(keySampling)
	assert.False(t, ok, "another key's is not known")

	v.forget(false)
	_, ok = v.hiddenFrom(key)
	assert.False(t, ok, "dropped with the views")
	v.memoize(key, lacked, base, views)
	_, ok = v.hiddenFrom(key)
	assert.True(t, ok, "made again while the views are the key's")
	v.drop(lacked[0], views[0])
	_, ok = v.hiddenFrom(key)
	assert.False(t, ok, "dropped with one view")
}
