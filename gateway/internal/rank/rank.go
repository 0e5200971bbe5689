// Package rank ranks documents for a query, in process: no model, no
// network. A document is a few fields of text (a tool's name, title,
// description, arguments), each text with a weight; the ranking is
// BM25F (Okapi BM25 with each field's length weighed against that
// field's average), times a bonus for the share of field 0 (the name)
// the query names, less a little when the name's verb is of another
// kind than the request's. Words are split at case changes, digits and
// punctuation (camelCase, snake_case, kebab-case), lowercased, stripped
// of a few common suffixes and of English stop words, the same way in
// documents and queries; a query's words also count, for less, for
// their synonyms (synonyms.go).
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

// Text is part of a document: its words count Weight times, against
// the length of its Field. The texts of one field of a document (a
// tool's arguments, say) make one length, weighed against that field's
// average over the documents (BM25F): a long description does not
// dilute a name.
type Text struct {
	Words  string
	Weight float32 // 1 when not positive
	Field  int     // 0 to MaxFields-1; out of range counts as the nearest
}

// MaxFields is the number of fields a document may have. Field 0 is
// its name: what the query names of it earns a bonus, and its verb is
// the document's.
const MaxFields = 5

// The ranking's parameters, tuned on the evaluation of
// gateway/testdata/realtools (docs/gateway.md).
const (
	k1 = 2.4 // BM25's saturation of a term's frequency
	b  = 1.0 // the weight of a field's length, but field 0's
	b0 = 0.7 // the weight of field 0's length

	synonymWeight  = 0.5  // a synonym's weight in a query, against 1 for the word itself
	surfaceWeight  = 0.1  // a field 0 word matched as written, not only stemmed: list_alerts lists alerts
	coverageWeight = 0.7  // the bonus of a document whose field 0 the query names all of
	verbPenalty    = 0.22 // the share a document loses when its verb is of another kind than the query's
)

// posting is a term's frequency in one document, its fields' weighted
// and length-normalized frequencies together.
type posting struct {
	doc int32
	tf  float32
}

// Index ranks a fixed set of documents. It is read-only once built, and
// safe for concurrent use.
type Index struct {
	terms    map[string]int32 // a term's postings, by index
	forms    map[string]int32 // a field 0 word's postings as it is written (not stemmed), by index
	postings [][]posting
	n        int                 // the documents
	names    [][]int32           // each document's terms of field 0, once each
	verbs    []uint8             // the kinds of verb (verbClasses) each document's field 0 names
	related  map[string][]string // a query term's synonyms (synonyms)
	verbOf   map[string]uint8    // the kinds of verb a term names (verbMasks)
	size     int64               // the bytes it holds, about
}

// New indexes docs: docs[i] is the document Search calls i.
func New(docs [][]Text) *Index {
	ix := &Index{
		terms: map[string]int32{}, forms: map[string]int32{}, n: len(docs), names: make([][]int32, len(docs)),
		verbs: make([]uint8, len(docs)), related: synonyms(), verbOf: verbMasks(),
	}
	ix.size += int64(len(ix.related)+len(ix.verbOf)) * 64 // the tables' entries, about
	termID := func(terms map[string]int32, term string) int32 {
		id, ok := terms[term]
		if !ok {
			id = int32(len(ix.postings))
			terms[term] = id
			ix.postings = append(ix.postings, nil)
			ix.size += int64(len(term)) + 48 // the key, its map slot and its slice header, about
		}
		return id
	}
	type occurrence struct {
		doc, id int32
		field   int32
		w       float32
	}
	// First the terms and the fields' lengths, then the frequencies.
	words := 0
	for _, texts := range docs {
		for _, t := range texts {
			words += len(t.Words) / 8 // about a term's worth of bytes, stop words and spaces included
		}
	}
	occ := make([]occurrence, 0, words) // by document
	lens := make([][MaxFields]float32, len(docs))
	var total [MaxFields]float64
	for d, texts := range docs {
		for _, t := range texts {
			w := t.Weight
			if w <= 0 {
				w = 1
			}
			f := int32(min(max(t.Field, 0), MaxFields-1))
			eachWord(t.Words, func(word string) {
				term := stem(word)
				id := termID(ix.terms, term)
				occ = append(occ, occurrence{int32(d), id, f, w})
				if f == 0 {
					occ = append(occ, occurrence{int32(d), termID(ix.forms, word), f, w * surfaceWeight})
					ix.verbs[d] |= ix.verbOf[term]
					if !slices.Contains(ix.names[d], id) {
						ix.names[d] = append(ix.names[d], id)
						ix.size += 4
					}
				}
				lens[d][f]++
			})
		}
		for f := range total {
			total[f] += float64(lens[d][f])
		}
	}
	var avg [MaxFields]float32
	for f := range avg {
		avg[f] = 1
		if len(docs) > 0 && total[f] > 0 {
			avg[f] = float32(total[f] / float64(len(docs)))
		}
	}
	counts := map[int32]float32{}
	for start := 0; start < len(occ); {
		d := occ[start].doc
		end := start
		clear(counts)
		for ; end < len(occ) && occ[end].doc == d; end++ {
			o := occ[end]
			bf := float32(b)
			if o.field == 0 {
				bf = b0
			}
			counts[o.id] += o.w / (1 - bf + bf*lens[d][o.field]/avg[o.field])
		}
		for _, id := range slices.Sorted(maps.Keys(counts)) {
			ix.postings[id] = append(ix.postings[id], posting{doc: d, tf: counts[id]})
			ix.size += 8
		}
		start = end
	}
	return ix
}

// idf is the inverse document frequency of the term id: the rarer, the
// more it says.
func (ix *Index) idf(id int32) float64 {
	n, df := float64(ix.n), float64(len(ix.postings[id]))
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// Size returns about how many bytes the index holds.
func (ix *Index) Size() int64 { return ix.size }

// Search returns the indexes of the documents that share a term with
// query, at most limit, best first (ties in document order).
func (ix *Index) Search(query string, limit int) []int {
	if limit < 1 || ix.n == 0 {
		return nil
	}
	weights := map[int32]float64{} // each term of the query, of its synonyms and its words as written, by weight
	add := func(term string, w float64) {
		if id, ok := ix.terms[term]; ok && weights[id] < w {
			weights[id] = w
		}
	}
	var verb uint8 // the kinds of the query's first verb: a question asks to see
	if isQuestion(query) {
		verb = ix.verbOf["show"]
	}
	q := rewrite(query)
	eachWord(q, func(word string) {
		if id, ok := ix.forms[word]; ok {
			weights[id] = 1
		}
	})
	eachTerm(q, func(term string) {
		if verb == 0 {
			verb = ix.verbOf[term]
		}
		add(term, 1)
		for _, r := range ix.related[term] {
			add(r, synonymWeight)
		}
	})
	scores := make([]float64, ix.n)
	for _, id := range slices.Sorted(maps.Keys(weights)) { // one order of the sums, for the same scores each time
		w := weights[id]
		ps := ix.postings[id]
		idf := ix.idf(id)
		for _, p := range ps {
			tf := float64(p.tf)
			scores[p.doc] += w * idf * tf * (k1 + 1) / (tf + k1)
		}
	}
	var hits []int
	for d, s := range scores {
		if s <= 0 {
			continue
		}
		hits = append(hits, d)
		if len(ix.names[d]) > 0 { // the share of its name the query names, its rarer words counting more
			var named, all float64
			for _, id := range ix.names[d] {
				idf := ix.idf(id)
				named += weights[id] * idf
				all += idf
			}
			scores[d] = s * (1 + coverageWeight*named/all)
		}
		if verb != 0 && ix.verbs[d] != 0 && verb&ix.verbs[d] == 0 {
			scores[d] *= 1 - verbPenalty
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

// eachTerm calls f with each term of s, in order.
func eachTerm(s string, f func(string)) {
	eachWord(s, func(w string) { f(stem(w)) })
}

// eachWord calls f with each word of s that is no stop word, lowercased
// but not stemmed, in order.
func eachWord(s string, f func(string)) {
	var word strings.Builder
	flush := func() {
		if word.Len() == 0 {
			return
		}
		w := word.String()
		word.Reset()
		if isStopWord(w) || strings.Trim(w, "0123456789") == "" {
			return // a stop word, or a number: "issue 12" names no tool
		}
		f(w)
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
// creates, created and creating are all "creat"; file and files "fil";
// reviewer and reviewers "review".
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		return w[:len(w)-3]
	case len(w) > 4 && strings.HasSuffix(w, "ed"):
		return w[:len(w)-2]
	case len(w) > 6 && strings.HasSuffix(w, "ers"):
		return w[:len(w)-3]
	case len(w) > 5 && strings.HasSuffix(w, "er"):
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
