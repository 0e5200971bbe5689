package stdiopeer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Peer is a server over stdio, started and initialized. Its methods are
// for one goroutine at a time.
type Peer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// Start starts commandLine (split on spaces), ended when ctx is, and
// initializes a session of protocol version with it as client.
func Start(ctx context.Context, commandLine, client, version string) (*Peer, error) {
	words := strings.Fields(commandLine)
	if len(words) == 0 {
		return nil, errors.New("stdiopeer: no command")
	}
	cmd := exec.CommandContext(ctx, words[0], words[1:]...)
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
	p := &Peer{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10)}
	name, _ := json.Marshal(client)  // a string always encodes
	vers, _ := json.Marshal(version) // so does this one
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":` + string(vers) + `,"capabilities":{},"clientInfo":{"name":` + string(name) + `,"version":"1"}}}`
	if _, err := p.Round([]byte(initialize), json.RawMessage("0")); err != nil {
		p.Close()
		return nil, fmt.Errorf("stdiopeer: initialize: %w", err)
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Round writes the request line, whose id is id, and returns the line
// that answers it, valid until the next Round, passing over the server's
// notifications and requests. A line over 64 KiB fails it
// (bufio.ErrBufferFull).
func (p *Peer) Round(line []byte, id json.RawMessage) ([]byte, error) {
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		return nil, err
	}
	for {
		answer, err := p.out.ReadSlice('\n')
		if err != nil {
			return nil, fmt.Errorf("reading the answer to %s: %w", id, err)
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(answer, &msg) == nil && msg.Method == "" && bytes.Equal(msg.ID, id) {
			return answer, nil
		}
	}
}

// Close ends the server: its standard input closed, then killed.
func (p *Peer) Close() {
	_ = p.in.Close()
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}
