package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-mcp/vigil/gateway/internal/rank"
	"github.com/vigil-mcp/vigil/server"
)

// searchCatalog returns the synthetic catalog of testdata/search as
// server tools.
func searchCatalog(b *testing.B) []server.Tool {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "search", "tools.json"))
	if err != nil {
		b.Fatal(err)
	}
	var tools []server.Tool
	if err := json.Unmarshal(raw, &tools); err != nil {
		b.Fatal(err)
	}
	return tools
}

// BenchmarkSearchIndex is what a listing change costs the first search
// of a view: its documents and index, for the 500 tools of the synthetic
// catalog.
func BenchmarkSearchIndex(b *testing.B) {
	tools := searchCatalog(b)
	b.ReportAllocs()
	var ix *rank.Index
	for b.Loop() {
		ix = rank.New(documents(tools))
	}
	b.ReportMetric(float64(ix.Size()), "index-bytes")
}

// BenchmarkSearchQuery is what a search_tools call costs the gateway once
// its view is indexed: the view's key (a hash of the 500 tools) and the
// query.
func BenchmarkSearchQuery(b *testing.B) {
	tools := searchCatalog(b)
	ts := newToolSearch(16 << 20)
	ts.rank(nil, tools, "warm", 5)
	b.ReportAllocs()
	for b.Loop() {
		if got := ts.rank(nil, tools, "cancel my dentist appointment on Friday", 5); len(got) == 0 {
			b.Fatal("nothing found")
		}
	}
}
