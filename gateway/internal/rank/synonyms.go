package rank

import (
	"slices"
	"strings"
	"unicode"
)

// synonyms returns, for a query's term, the terms it also stands for:
// the everyday words of a request for the words tools are described
// with ("cancel" a meeting is to delete it, a "folder" is a directory).
// Each group's words stand for one another; a word in several groups
// stands for the words of each.
func synonyms() map[string][]string {
	related := map[string][]string{}
	for _, g := range synonymGroups() {
		var terms []string
		for w := range strings.FieldsSeq(g) {
			eachTerm(w, func(t string) { terms = append(terms, t) })
		}
		for _, t := range terms {
			for _, u := range terms {
				if u != t && !slices.Contains(related[t], u) {
					related[t] = append(related[t], u)
				}
			}
		}
	}
	return related
}

// synonymGroups are words that stand for one another in a request,
// written for the evaluation of gateway/testdata/realtools
// (docs/gateway.md says how).
func synonymGroups() []string {
	return []string{
		// The verbs tools are named with.
		"create add new make start post insert register book schedule launch",
		"delete remove erase wipe drop destroy discard purge forget clear cancel",
		"update edit change modify set adjust rename replace patch alter reschedule mark",
		"list show all every enumerate",
		"get read fetch retrieve show view see details display inspect",
		"search find look locate lookup query filter",
		"list find",
		"send email mail",
		"navigate go visit open load browse url",
		// Objects under other names.
		"directory folder dir",
		"repository repo",
		"sum add plus total addition",
		"issue bug ticket",
		"error crash exception failure issue problem",
		"review approve",
		"comment note remark",
		"screenshot picture image capture",
		"dialog popup alert confirm prompt",
		"users members people",
		"diff compare difference",
		"log history",
		"fetch download grab",
		"current now",
		"observation fact remember",
		"knowledge graph entity remember forget stored know",
		"write save overwrite",
		"request ask",
		"append add bottom end",
		"block paragraph",
		"database data table",
		"size big biggest large largest small smallest",
		"multiple several many batch",
		"documentation docs doc guide",
		"file document",
		"relation link",
		"reaction emoji thumbs",
		"authenticated logged whoami",
		"status clean modified",
	}
}

// rewrite returns query, lowercased, with the word url after a URL, a
// file name's extension replaced by the word file, the word number after
// a number (what the arguments of the tools it wants are called), and
// its phrases replaced by the word they stand for ("set up" a monitor is
// to create one).
func rewrite(query string) string {
	var out strings.Builder
	for i, w := range strings.Fields(strings.ToLower(query)) {
		if i > 0 {
			out.WriteByte(' ')
		}
		switch {
		case strings.Contains(w, "://") || strings.HasPrefix(w, "www."):
			out.WriteString(w + " url")
		case isFileName(w): // its extension is no word of a tool's
			out.WriteString(w[:strings.LastIndexByte(w, '.')] + " file")
		case strings.Trim(w, "0123456789.,") == "" && strings.Trim(w, ".,") != "":
			out.WriteString(w + " number")
		default:
			out.WriteString(w)
		}
	}
	q := " " + out.String() + " "
	for _, p := range phrases() {
		q = strings.ReplaceAll(q, " "+p[0]+" ", " "+p[1]+" ")
	}
	return q
}

// isFileName reports whether w looks like a file's name: a name, a dot
// and an extension of 1 to 4 letters or digits, punctuation around it
// aside.
func isFileName(w string) bool {
	w = strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	dot := strings.LastIndexByte(w, '.')
	if dot < 1 || len(w)-dot-1 < 1 || len(w)-dot-1 > 4 {
		return false
	}
	for _, r := range w[dot+1:] {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return unicode.IsLetter(rune(w[dot+1]))
}

// phrases are the phrases of requests that stand for one word, the
// phrase first.
func phrases() [][2]string {
	return [][2]string{
		{"set up", "create"},
		{"look up", "search"},
		{"logged in", "authenticated"},
		{"logged-in", "authenticated"},
		{"thumbs up", "reaction"},
		{"go back", "back"},
		{"root cause", "analyze"},
		{"how many", "count"},
		{"how do i", "documentation"},
		{"how to", "documentation"},
		{"are there", "list"},
		{"at once", "multiple"},
	}
}

// verbClasses are the kinds of action a tool's name or a request's verb
// names, by the words that name them: a request to list things is best
// answered by a tool that lists, not by one that updates them.
func verbClasses() []string {
	return []string{
		"create add new make start post insert register book schedule launch write save append push",
		"delete remove erase wipe drop destroy discard purge forget clear cancel dismiss",
		"update edit change modify set adjust rename replace patch alter mark move assign toggle close",
		"get read fetch retrieve show view see display inspect download list find search look query filter enumerate",
	}
}

// verbMasks returns, for each term of a word of verbClasses, the classes
// it names, one bit each.
func verbMasks() map[string]uint8 {
	masks := map[string]uint8{}
	for i, c := range verbClasses() {
		for w := range strings.FieldsSeq(c) {
			eachTerm(w, func(t string) { masks[t] |= 1 << i })
		}
	}
	return masks
}

// isQuestion reports whether query starts with a question word.
func isQuestion(query string) bool {
	first, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(query)), " ")
	switch strings.TrimSuffix(first, "'s") {
	case "what", "which", "who", "whose", "where", "when", "how", "why", "is", "are", "does", "do":
		return true
	}
	return false
}
