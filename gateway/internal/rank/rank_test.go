package rank_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/gateway/internal/rank"
)

// TestWordsSplitAndStemmed: names are split at case changes, digits and
// punctuation, the forms of a word meet, stop words match nothing.
func TestWordsSplitAndStemmed(t *testing.T) {
	ix := rank.New([][]rank.Text{
		{{Words: "createCalendarEvent", Weight: 3}},
		{{Words: "s3-list-buckets", Weight: 3}},
		{{Words: "HTTPServer_restart", Weight: 3}},
		{{Words: "the tool to use", Weight: 1}},
	})
	for query, want := range map[string][]int{
		"created calendar events": {0},
		"bucket listing":          {1},
		"s3":                      {1},
		"http server":             {2},
		"restarting servers":      {2},
		"the to use":              {3}, // "use": the others are stop words
		"tool":                    nil, // a stop word
	} {
		assert.Equal(t, want, ix.Search(query, 5), query)
	}
}

// TestRanksByBM25: a rarer word counts more, a name more than a
// description, a query's everyday verb for the verb tools are named with
// (at half weight), ties in document order; limit bounds the answer.
func TestRanksByBM25(t *testing.T) {
	ix := rank.New([][]rank.Text{
		{{Words: "list_files", Weight: 3}, {Words: "List the files of a folder.", Weight: 1}},
		{{Words: "delete_file", Weight: 3}, {Words: "Delete a file.", Weight: 1}},
		{{Words: "read_file", Weight: 3}, {Words: "Read a file.", Weight: 1}},
		{{Words: "list_folders", Weight: 3}, {Words: "List folders.", Weight: 1}},
	})
	assert.Equal(t, []int{1}, ix.Search("cancel", 5), "cancel stands for delete")
	assert.Equal(t, []int{1, 2, 0}, ix.Search("remove a file", 5), "remove: delete; then file, in the shorter document first")
	assert.Equal(t, []int{3, 0}, ix.Search("folders", 5), "in a name more than in a description")
	assert.Equal(t, []int{1, 2}, ix.Search("file", 2), "ties in document order, within the limit")
	assert.Empty(t, ix.Search("nothing matches", 5))
	assert.Empty(t, ix.Search("file", 0))
	assert.Empty(t, rank.New(nil).Search("file", 3))
	assert.Positive(t, ix.Size())
}
