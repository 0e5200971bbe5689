package cmdline

import (
	"errors"
	"strings"
)

// Split splits a command line into words as a POSIX shell does
// for a simple command, without running one: words are separated by
// blanks (spaces, tabs, newlines); within single quotes every character
// is literal; within double quotes a backslash escapes only $, `, ", \
// and a newline; elsewhere a backslash escapes the next character. There
// is no expansion of any kind ($VAR, ~, globs, redirections and pipes are
// plain characters). It fails on an empty line or an unterminated quote
// or escape.
func Split(line string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch c {
		case ' ', '\t', '\n':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case '\\':
			if i+1 == len(line) {
				return nil, errors.New("command line ends with an escape")
			}
			i++
			word.WriteByte(line[i])
			inWord = true
		case '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated single quote in command line")
			}
			word.WriteString(line[i+1 : i+1+end])
			i += 1 + end
			inWord = true
		case '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("$`\"\\\n", line[i+1]) >= 0 {
					i++
				}
				word.WriteByte(line[i])
			}
			if i == len(line) {
				return nil, errors.New("unterminated double quote in command line")
			}
			inWord = true
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command line")
	}
	return words, nil
}
