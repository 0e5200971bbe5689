package gateway

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
)

// searchViewOf returns a view of n tools, which differ from other views'
// by salt.
func searchViewOf(salt, n int) []server.Tool {
	tools := make([]server.Tool, n)
	for i := range tools {
		tools[i] = server.Tool{Name: fmt.Sprintf("tool_%d_%d", salt, i), Description: "list the files of a folder", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
	}
	return tools
}

// rankSize returns the size of the index of tools.
func rankSize(tools []server.Tool) int64 {
	ts := newToolSearch(1 << 30)
	ts.rank(nil, tools, "x", 1)
	return ts.bytes
}

// TestSearchCacheBounded: the indexes kept are at most maxSearchViews,
// and hold at most the catalogs' bound together (but the one just
// built), the least recently searched going first; a view searched again
// is served from its index, and what is found is the view's own tools.
func TestSearchCacheBounded(t *testing.T) {
	ts := newToolSearch(16 << 20)
	for salt := range 3 * maxSearchViews {
		require.Equal(t, []int{0, 1}, ts.rank(nil, searchViewOf(salt, 4), "files", 2))
	}
	assert.Len(t, ts.views, maxSearchViews)
	assert.Len(t, ts.used, maxSearchViews)
	var sum int64
	for _, v := range ts.views {
		sum += v.size
	}
	assert.Equal(t, sum, ts.bytes, "the bytes counted are those of the indexes kept")

	one := rankSize(searchViewOf(0, 4))
	small := newToolSearch(2*one + one/2) // room for two indexes
	for salt := range 5 {
		small.rank(nil, searchViewOf(salt, 4), "files", 1)
		assert.LessOrEqual(t, small.bytes, small.maxBytes)
	}
	assert.Len(t, small.views, 2)
	assert.Equal(t, []uint64{small.key(searchViewOf(3, 4)), small.key(searchViewOf(4, 4))}, small.used, "the least recently searched went first")
	kept := small.views[small.key(searchViewOf(4, 4))]
	small.rank(nil, searchViewOf(4, 4), "files", 1)
	assert.Same(t, kept, small.views[small.key(searchViewOf(4, 4))], "searched again, from its index")

	tiny := newToolSearch(1) // no room: the one just built is kept alone
	tiny.rank(nil, searchViewOf(0, 4), "files", 1)
	tiny.rank(nil, searchViewOf(1, 4), "files", 1)
	assert.Len(t, tiny.views, 1)
}

// TestSearchCacheConcurrent: searches of the same views at once agree,
// and the cache stays within its bounds (run with -race).
func TestSearchCacheConcurrent(t *testing.T) {
	ts := newToolSearch(16 << 20)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			<-start
			for salt := range 2 * maxSearchViews {
				assert.Equal(t, []int{0, 1, 2}, ts.rank(nil, searchViewOf((salt+g)%(2*maxSearchViews), 3), "folder files", 3))
			}
		})
	}
	close(start)
	wg.Wait()
	assert.LessOrEqual(t, len(ts.views), maxSearchViews)
}
