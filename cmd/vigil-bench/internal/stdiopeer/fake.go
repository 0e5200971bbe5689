package stdiopeer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// ServeFake serves a fake server over stdio on in and out until in ends:
// it answers every request with a tools/call result whose text is the
// request's method and id, after a notification and a request of its own,
// as a server's log messages and sampling come between answers.
func ServeFake(in io.Reader, out io.Writer) {
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(lines.Bytes(), &msg) != nil || msg.ID == nil {
			continue
		}
		text, _ := json.Marshal(msg.Method + " " + string(msg.ID)) // a string always encodes
		_, _ = fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"before %s"}}`+"\n", msg.ID)
		_, _ = fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"method":"sampling/createMessage","params":{}}`+"\n", msg.ID)
		_, _ = fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"serverInfo":{},"content":[{"type":"text","text":%s}]}}`+"\n", msg.ID, text)
	}
}
