package cmdline_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/cmdline"
)

func TestSplitCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		line    string
		want    []string
		wantErr string
	}{
		{name: "words", line: "  npx -y\t@modelcontextprotocol/server-everything\n", want: []string{"npx", "-y", "@modelcontextprotocol/server-everything"}},
		{name: "single quotes are literal", line: `run 'a b' '$HOME \n'`, want: []string{"run", "a b", `$HOME \n`}},
		{name: "double quotes escape four", line: `run "a \"b\" \\ \$x \n"`, want: []string{"run", `a "b" \ $x \n`}},
		{name: "escapes outside quotes", line: `run a\ b \'c`, want: []string{"run", "a b", "'c"}},
		{name: "quotes join a word", line: `run a'b'"c"d`, want: []string{"run", "abcd"}},
		{name: "empty quoted word", line: `run '' ""`, want: []string{"run", "", ""}},
		{name: "no expansion", line: `run $HOME ~ * | > ;`, want: []string{"run", "$HOME", "~", "*", "|", ">", ";"}},
		{name: "empty", line: " \t", wantErr: "empty command line"},
		{name: "open single quote", line: "run 'a", wantErr: "unterminated single quote"},
		{name: "open double quote", line: `run "a\"`, wantErr: "unterminated double quote"},
		{name: "trailing escape", line: `run a\`, wantErr: "ends with an escape"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := cmdline.Split(tc.line)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
