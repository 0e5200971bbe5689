package server

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A completed task's result gains resultType unless it has one; anything
// else is kept byte for byte.
func TestTypedTaskResult(t *testing.T) {
	for in, want := range map[string]string{
		`{"content":[]}`:                         `{"resultType":"complete","content":[]}`,
		`{}`:                                     `{"resultType":"complete"}`,
		`{ }`:                                    `{"resultType":"complete"}`,
		"{\n \"isError\":true}":                  `{"resultType":"complete","isError":true}`,
		`{"content":[],"resultType":"complete"}`: `{"content":[],"resultType":"complete"}`,
		`{"resultType":"input_required","x":1}`:  `{"resultType":"input_required","x":1}`,
		`{"nested":{"resultType":"x"}}`:          `{"resultType":"complete","nested":{"resultType":"x"}}`,
		`[1]`:                                    `[1]`,
		``:                                       ``,
	} {
		got := typedTaskResult(json.RawMessage(in))
		assert.Equal(t, want, string(got), "input %q", in)
		if want != "" && want != "[1]" {
			assert.True(t, json.Valid(got), "%q", got)
		}
	}
}
