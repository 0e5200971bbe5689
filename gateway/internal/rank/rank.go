// Package rank ranks documents for a query with Okapi BM25, in process:
// no model, no network. A document is a few texts, each with a weight (a
// tool's name counts more than its description); words are split at
// case changes, digits and punctuation (camelCase, snake_case,
// kebab-case), lowercased, stripped of a few common suffixes and of
// English stop words, the same way in documents and queries.
package rank

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text is part of a document: its words count Weight times.
type Text struct {
	Words  string
	Weight float32 // 1 when not positive
}

// BM25's parameters, the usual ones.
const (
	k1 = 1.2
	b  = 0.75
)

// posting is a term's weighted frequency in one document.
type posting struct {
	doc int32
	tf  float32
}

// Index ranks a fixed set of documents. It is read-only once built, and
// safe for concurrent use.
type Index struct {
	terms    map[string]int32 // a term's postings, by index
	postings [][]posting
	docLen   []float32 // each document's weighted length
	avgLen   float64
	size     int64 // the bytes it holds, about
}

// New indexes docs: docs[i] is the document Search calls i.
func New(docs [][]Text) *Index {
	ix := &Index{terms: map[string]int32{}, docLen: make([]float32, len(docs))}
	counts := map[int32]float32{}
	var total float64
	for d, texts := range docs {
		clear(counts)
		for _, t := range texts {
			w := t.Weight
			if w <= 0 {
				w = 1
			}
			eachTerm(t.Words, func(term string) {
				id, ok := ix.terms[term]
				if !ok {
					id = int32(len(ix.postings))
					ix.terms[term] = id
					ix.postings = append(ix.postings, nil)
					ix.size += int64(len(term)) + 48 // the key, its map slot and its slice header, about
				}
				counts[id] += w
				ix.docLen[d] += w
			})
		}
		for id, tf := range counts {
			ix.postings[id] = append(ix.postings[id], posting{doc: int32(d), tf: tf})
			ix.size += 8
		}
		total += float64(ix.docLen[d])
	}
	if len(docs) > 0 {
		ix.avgLen = total / float64(len(docs))
	}
	ix.size += int64(len(docs)) * 4
	return ix
}

// Size returns about how many bytes the index holds.
func (ix *Index) Size() int64 { return ix.size }

// Search returns the indexes of the documents that share a term with
// query, at most limit, best first (BM25; ties in document order).
func (ix *Index) Search(query string, limit int) []int {
	if limit < 1 || len(ix.docLen) == 0 {
		return nil
	}
	weights := map[int32]float64{} // each term of the query, and of its verbs' synonyms, by weight
	add := func(term string, w float64) {
		if id, ok := ix.terms[term]; ok && weights[id] < w {
			weights[id] = w
		}
	}
	eachTerm(query, func(term string) {
		add(term, 1)
		for _, verb := range verbsOf(term) {
			add(verb, synonymWeight)
		}
	})
	scores := make([]float64, len(ix.docLen))
	n := float64(len(ix.docLen))
	for _, id := range slices.Sorted(maps.Keys(weights)) { // one order of the sums, for the same scores each time
		w := weights[id]
		ps := ix.postings[id]
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := k1 * (1 - b + b*float64(ix.docLen[p.doc])/ix.avgLen)
			scores[p.doc] += w * idf * tf * (k1 + 1) / (tf + norm)
		}
	}
	var hits []int
	for d, s := range scores {
		if s > 0 {
			hits = append(hits, d)
		}
	}
	slices.SortFunc(hits, func(x, y int) int {
		if c := cmp.Compare(scores[y], scores[x]); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	return hits[:min(len(hits), limit)]
}

// synonymWeight is the weight of a verb a query's word stands for
// (verbsOf), against 1 for the word itself.
const synonymWeight = 0.5

// verbsOf returns the terms of the verbs tools are usually named with
// (create, delete, update, list, get, search, send) that term, a query's,
// stands for in everyday words: "cancel" a meeting is to delete it,
// "open" an issue to create it. Nothing else is expanded.
func verbsOf(term string) []string {
	for _, s := range [...]struct{ verb, words string }{
		{"create", "add make new open start schedule launch write post publish book register"},
		{"delete", "remove cancel erase wipe drop destroy discard purge"},
		{"update", "edit change modify move rename set adjust reschedule"},
		{"list", "show all every"},
		{"get", "fetch read show view see details"},
		{"search", "find look locate lookup query"},
		{"send", "email mail"},
	} {
		for w := range strings.FieldsSeq(s.words) {
			if stem(w) == term {
				return []string{stem(s.verb)}
			}
		}
	}
	return nil
}

// eachTerm calls f with each term of s, in order.
func eachTerm(s string, f func(string)) {
	var word strings.Builder
	flush := func() {
		if word.Len() == 0 {
			return
		}
		w := word.String()
		word.Reset()
		if isStopWord(w) {
			return
		}
		f(stem(w))
	}
	prev := rune(0)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case unicode.IsLetter(r):
			// camelCase, and HTTPServer: a new word at a capital after a
			// lowercase letter, or before a lowercase one after capitals.
			if unicode.IsUpper(r) && word.Len() > 0 {
				next, _ := utf8.DecodeRuneInString(s[i:])
				if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && unicode.IsLower(next)) {
					flush()
				}
			} else if unicode.IsDigit(prev) {
				flush()
			}
			word.WriteRune(unicode.ToLower(r))
		case unicode.IsDigit(r):
			if unicode.IsLetter(prev) {
				flush()
			}
			word.WriteRune(r)
		default:
			flush()
		}
		prev = r
	}
	flush()
}

// stem strips one common English suffix, leaving at least three
// letters, the same way for every form of a word that it meets: create,
// creates, created and creating are all "creat"; file and files "fil".
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		return w[:len(w)-3]
	case len(w) > 4 && strings.HasSuffix(w, "ed"):
		return w[:len(w)-2]
	case len(w) > 4 && strings.HasSuffix(w, "es"):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	case len(w) > 3 && strings.HasSuffix(w, "e"):
		return w[:len(w)-1]
	}
	return w
}

// isStopWord reports whether w is left out of documents and queries: a
// word that says nothing of what a tool does.
func isStopWord(w string) bool {
	switch w {
	case "a", "an", "and", "are", "as", "at", "be", "by", "can", "could", "do", "does", "for", "from",
		"has", "have", "how", "i", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or",
		"please", "so", "some", "that", "the", "their", "them", "then", "there", "these", "this", "to",
		"us", "want", "was", "we", "what", "when", "where", "which", "who", "will", "with", "would",
		"you", "your", "need", "needs", "tool", "tools":
		return true
	}
	return false
}
