package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
)

// relay is the floor of a gateway in front of a server over stdio (-relay):
// a tools/call is written to the server's standard input as it came, one
// at a time, and the line that answers its id is the POST's answer. It
// checks, renames, counts and traces nothing: what is left of a gateway's
// hop is the HTTP exchange and the pipe's.
type relay struct {
	mu  sync.Mutex // one call at a time: the answer read next is its own
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startRelay starts commandLine (split on spaces) and initializes a
// session with it.
func startRelay(commandLine string) (*relay, error) {
	words := strings.Fields(commandLine)
	if len(words) == 0 {
		return nil, errors.New("-relay: no command")
	}
	cmd := exec.Command(words[0], words[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &relay{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10)}
	const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"floor","version":"dev"}}}`
	if _, err := r.call([]byte(initialize), json.RawMessage("0")); err != nil {
		r.close()
		return nil, fmt.Errorf("-relay: initialize: %w", err)
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// call writes the request line and returns the line that answers id,
// passing over the server's notifications and requests. A line over the
// reader's 64 KiB fails it (bufio.ErrBufferFull).
func (r *relay) call(line []byte, id json.RawMessage) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.in.Write(append(line, '\n')); err != nil {
		return nil, err
	}
	for {
		answer, err := r.out.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(answer, &msg) == nil && msg.Method == "" && bytes.Equal(msg.ID, id) {
			return bytes.Clone(answer), nil
		}
	}
}

// close ends the server: its standard input closed, then killed.
func (r *relay) close() {
	_ = r.in.Close()
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}
