package gateway

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"sync"

	"github.com/vigil-mcp/vigil/gateway/internal/rank"
	"github.com/vigil-mcp/vigil/server"
)

// Search instead of the full list (Config.Search): the server lists
// search_tools and call_tool (server.Server.SetToolSearch) and the
// gateway ranks, with BM25F and a few tables of words (internal/rank), the tools a caller would
// list. An index is built for each catalog view (the tools one caller may
// list, as they are now) the first time it is searched, and kept for the
// next searches of that view: a listing change makes a new view.

// The names of the two tools of the search mode (server.Server.SetToolSearch),
// which the tool view shows only at the endpoints that search (views.go).
const (
	searchToolName = "search_tools"
	callToolName   = "call_tool"
)

// searches reports whether one of the catalog's endpoints (its default
// one among them) searches; a
// nil catalog has none. Mount turns the search mode on for it: a catalog
// given later (SetCatalog) that has one while the mode is off lists its
// tools there until the gateway is mounted again.
func (c *Catalog) searches() bool {
	if c == nil {
		return false
	}
	for _, e := range c.endpoints {
		if e.search {
			return true
		}
	}
	return c.def != nil && c.def.search
}

// maxSearchViews bounds the views whose index is kept.
const maxSearchViews = 16

// Weights of a tool's texts in its document (tuned with the ranking's
// parameters, internal/rank): its name, its title (or its annotations'
// title), its description, the first sentence of its description again
// (what most tools say first is what they do), its arguments' names and
// their descriptions.
const (
	weightName    = 1.75
	weightTitle   = 1.4
	weightText    = 1
	weightLead    = 0.5
	weightArgName = 1
	weightArgText = 0.7
)

// The fields of a tool's document, each of its own length (rank.Text):
// the name is field 0, whose words the query naming earns a bonus.
const (
	fieldName = iota
	fieldTitle
	fieldText
	fieldArgs
	fieldLead
)

// toolSearch ranks the tools of the views searched, keeping the index of
// the last maxSearchViews, within maxBytes together.
type toolSearch struct {
	seed     maphash.Seed
	maxBytes int64 // the bound on the indexes kept: the upstreams' MaxCatalogBytes together

	mu    sync.Mutex
	views map[uint64]*searchView
	used  []uint64 // the keys of views, least recently searched first
	bytes int64    // the indexes' sizes together
}

// searchView is the index of one view, built once.
type searchView struct {
	built sync.Once
	n     int // the tools it indexes
	index *rank.Index
	size  int64 // the index's size once counted; guarded by toolSearch.mu
}

// newToolSearch returns the search of a gateway whose upstreams' catalogs
// may hold maxBytes together.
func newToolSearch(maxBytes int64) *toolSearch {
	return &toolSearch{seed: maphash.MakeSeed(), maxBytes: maxBytes, views: map[uint64]*searchView{}}
}

// searchOn makes the server's tools served through the gateway's
// search, whose indexes are bounded by the catalogs of ups together.
func (g *Gateway) searchOn(ups []Upstream) error {
	var bound int64
	for _, up := range ups {
		bound += (&mount{up: up}).maxCatalog()
	}
	if err := g.srv.SetToolSearch(newToolSearch(bound).rank); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	g.searching = true
	return nil
}

// rank is the server's tool search (server.Server.SetToolSearch): the
// indexes of the best of tools for query, at most limit.
func (ts *toolSearch) rank(_ *server.Request, tools []server.Tool, query string, limit int) []int {
	key := ts.key(tools)
	v := ts.view(key)
	v.built.Do(func() {
		v.n = len(tools)
		v.index = rank.New(documents(tools))
		ts.account(key, v, v.index.Size())
	})
	if v.n != len(tools) { // a key shared by two views: never seen, but never served from the other's index
		return rank.New(documents(tools)).Search(query, limit)
	}
	return v.index.Search(query, limit)
}

// key identifies a view: what of its tools the index reads, in order.
func (ts *toolSearch) key(tools []server.Tool) uint64 {
	var h maphash.Hash
	h.SetSeed(ts.seed)
	for i := range tools {
		t := &tools[i]
		for _, s := range []string{t.Name, t.Title, t.Description} {
			_, _ = h.WriteString(s)
			_ = h.WriteByte(0)
		}
		_, _ = h.Write(t.InputSchema)
		_ = h.WriteByte(0)
	}
	return h.Sum64()
}

// view returns the view of key, made (unbuilt) when it is new, and marks
// it the most recently searched.
func (ts *toolSearch) view(key uint64) *searchView {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	v, ok := ts.views[key]
	if !ok {
		v = &searchView{}
		ts.views[key] = v
	}
	ts.touch(key)
	for len(ts.views) > maxSearchViews {
		ts.evict(0)
	}
	return v
}

// account counts size, that of the index of v just built, evicting the
// views least recently searched but v while the indexes hold more than
// maxBytes.
func (ts *toolSearch) account(key uint64, v *searchView, size int64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.views[key] != v {
		return // evicted while it was built: not kept, not counted
	}
	v.size = size
	ts.bytes += size
	for ts.bytes > ts.maxBytes {
		i := 0
		if ts.used[0] == key {
			i = 1
		}
		if i >= len(ts.used) {
			break
		}
		ts.evict(i)
	}
}

// touch makes key the most recently searched; ts.mu is held.
func (ts *toolSearch) touch(key uint64) {
	for i, k := range ts.used {
		if k == key {
			ts.used = append(ts.used[:i], ts.used[i+1:]...)
			break
		}
	}
	ts.used = append(ts.used, key)
}

// evict forgets the view ts.used[i]; ts.mu is held.
func (ts *toolSearch) evict(i int) {
	key := ts.used[i]
	ts.used = append(ts.used[:i], ts.used[i+1:]...)
	ts.bytes -= ts.views[key].size
	delete(ts.views, key)
}

// documents returns each tool's texts: its name, title, description and
// its arguments' names and descriptions.
func documents(tools []server.Tool) [][]rank.Text {
	docs := make([][]rank.Text, len(tools))
	for i := range tools {
		t := &tools[i]
		title := t.Title
		if title == "" && t.Annotations != nil {
			title = t.Annotations.Title // the display name when the tool has no title (MCP's order)
		}
		doc := []rank.Text{{Words: t.Name, Weight: weightName, Field: fieldName}, {Words: title, Weight: weightTitle, Field: fieldTitle}, {Words: t.Description, Weight: weightText, Field: fieldText}}
		doc = append(doc, rank.Text{Words: lead(t.Description), Weight: weightLead, Field: fieldLead})
		var schema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		if json.Unmarshal(t.InputSchema, &schema) == nil {
			for _, name := range slices.Sorted(maps.Keys(schema.Properties)) { // one order, for the same scores each time
				doc = append(doc, rank.Text{Words: name, Weight: weightArgName, Field: fieldArgs}, rank.Text{Words: schema.Properties[name].Description, Weight: weightArgText, Field: fieldArgs})
			}
		}
		docs[i] = doc
	}
	return docs
}

// lead returns the first sentence of a description: what most tools
// say first is what they do.
func lead(desc string) string {
	for i := 0; i < len(desc); i++ {
		if desc[i] == '\n' || (desc[i] == '.' && (i+1 == len(desc) || desc[i+1] == ' ')) {
			return desc[:i]
		}
	}
	return desc
}
