package serverhook_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/serverhook"
)

// The OnDone functions run, in order, before the AfterDone ones, each
// with the outcome; a copy that forgot its OnDone functions runs none of
// them; a nil Ends, outside a request, takes functions and runs nothing.
func TestEnds(t *testing.T) {
	t.Parallel()
	var ends serverhook.Ends[int]
	var got []string
	ends.AfterDone(func(o int) { got = append(got, "after", string(rune('0'+o))) })
	ends.OnDone(func(o int) { got = append(got, "done1", string(rune('0'+o))) })
	ends.OnDone(func(int) { got = append(got, "done2") })
	assert.True(t, ends.HasAfter())
	ends.RunDone(7)
	ends.RunAfter(7)
	assert.Equal(t, []string{"done1", "7", "done2", "after", "7"}, got)

	cp := ends
	cp.ForgetDone()
	got = nil
	cp.RunDone(1)
	assert.Empty(t, got, "the copy runs none of the original's OnDone functions")

	none := serverhook.Of[int](context.Background())
	assert.Nil(t, none)
	none.OnDone(func(int) { t.Fatal("a nil Ends runs nothing") })
	none.AfterDone(func(int) { t.Fatal("a nil Ends runs nothing") })

	ctx := context.WithValue(context.Background(), serverhook.EndsKey{}, &ends)
	assert.Same(t, &ends, serverhook.Of[int](ctx), "the Ends a request's context holds")
	assert.Nil(t, serverhook.Of[string](ctx), "of another outcome type: none")
	assert.Nil(t, serverhook.ServerOf(ctx))
	hook := &serverhook.Server{}
	assert.Same(t, hook, serverhook.ServerOf(context.WithValue(ctx, serverhook.ServerKey{}, hook)))
}
