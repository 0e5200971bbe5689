// Package invisible escapes the format characters that change how text
// around them is displayed without showing themselves (the bidirectional
// controls of Trojan Source, CVE-2021-42574, and zero-width characters):
// a client's tool name, request id or argument name that carries them
// could make a log line, an audit record or the live page read otherwise
// than what it holds. [Escape] writes each as \uXXXX, which is the same
// character in a JSON string and visible text anywhere else; [Writer]
// escapes what it passes on. Text that holds none costs a scan eight
// bytes at a time and no allocation. It imports nothing of Vigil.
package invisible
