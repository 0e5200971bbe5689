package rank_test

import (
	"strings"
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

// TestFieldsWeighedApart: a field's length is weighed against that
// field's average (BM25F), so a long description does not dilute a
// name; a name the query names all of earns more than one it names half
// of; a word of a name as written (alerts) counts more than its stem
// alone (alert).
func TestFieldsWeighedApart(t *testing.T) {
	long := "Reads things. " + strings.Repeat("It reads and returns many kinds of records with paging and filters. ", 20)
	ix := rank.New([][]rank.Text{
		{{Words: "get_record", Weight: 2, Field: 0}, {Words: long, Weight: 1, Field: 2}},
		{{Words: "get_note", Weight: 2, Field: 0}, {Words: "Get a note, a record of a meeting.", Weight: 1, Field: 2}},
		{{Words: "delete_file", Weight: 2, Field: 0}, {Words: "Delete a file.", Weight: 1, Field: 2}},
		{{Words: "delete_repository", Weight: 2, Field: 0}, {Words: "Delete a repository and its files.", Weight: 1, Field: 2}},
		{{Words: "get_alert", Weight: 2, Field: 0}, {Words: "Get one alert.", Weight: 1, Field: 2}},
		{{Words: "list_alerts", Weight: 2, Field: 0}, {Words: "List every alert.", Weight: 1, Field: 2}},
	})
	assert.Equal(t, 0, ix.Search("get a record", 1)[0], "the name, however long the description")
	assert.Equal(t, 3, ix.Search("delete the repository files", 1)[0], "all of its name named")
	assert.Equal(t, 5, ix.Search("alerts", 1)[0], "the word as written in the name")
	assert.Equal(t, 4, ix.Search("alert", 1)[0], "and the other way round")
}

// TestRequestsReadAsMeant: a query's words count for their synonyms
// (folder: directory), its phrases for the word they stand for (set up:
// create), a URL for url, a file name for file and a number for number;
// a tool whose name's verb is of another kind than the request's (a
// question asks to see) scores less.
func TestRequestsReadAsMeant(t *testing.T) {
	ix := rank.New([][]rank.Text{
		{{Words: "create_directory", Weight: 2}, {Words: "Create a directory.", Field: 2}},
		{{Words: "create_monitor", Weight: 2}, {Words: "Create a monitor.", Field: 2}},
		{{Words: "update_monitor", Weight: 2}, {Words: "Update a monitor.", Field: 2}},
		{{Words: "navigate", Weight: 2}, {Words: "Navigate to a URL.", Field: 2}},
		{{Words: "read_file", Weight: 2}, {Words: "Read a file.", Field: 2}},
		{{Words: "get_sum", Weight: 2}, {Words: "The sum of two numbers.", Field: 2}},
		{{Words: "list_monitors", Weight: 2}, {Words: "List monitors.", Field: 2}},
	})
	for query, want := range map[string]int{
		"make a folder called backups":      0,
		"set up a monitor for our homepage": 1,
		"change the monitor's interval":     2,
		"https://example.com":               3,
		"show me notes.txt":                 4,
		"what is 1200 plus 345":             5,
		"is there a monitor":                6, // a question: create and update score less
	} {
		got := ix.Search(query, 1)
		if assert.Len(t, got, 1, query) {
			assert.Equal(t, want, got[0], query)
		}
	}
}
