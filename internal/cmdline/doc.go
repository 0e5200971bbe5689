// Package cmdline splits a command line into words as a POSIX shell does
// for a simple command, without running one ([Split]): how an operator
// names an upstream MCP server's command in one flag or one line of a
// compose file.
package cmdline
