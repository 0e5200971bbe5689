package jsonscan

// NestsDeeper reports whether data, valid JSON, nests arrays and objects
// more than limit deep: a top-level object or array is one level, each one
// inside it one more. It stops at the first value past the limit, and
// passes over strings eight bytes at a time.
func NestsDeeper(data []byte, limit int) bool {
	depth := 0
	for i := 0; i < len(data); {
		switch data[i] {
		case '"':
			i = skipString(data, i)
			continue
		case '{', '[':
			if depth++; depth > limit {
				return true
			}
		case '}', ']':
			depth--
		}
		i++
	}
	return false
}
