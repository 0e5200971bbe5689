package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback `address` to listen on (port 0: one the kernel picks)")
	relayTo := flag.String("relay", "", "relay each tools/call to the server this `command line` starts, over stdio, and answer with its answer (the floor of a gateway)")
	flag.Parse()
	if err := run(*addr, *relayTo); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

// run serves the floor on addr, relaying to the server relayTo starts
// when it is not empty.
func run(addr, relayTo string) error {
	f := newFloor()
	if relayTo != "" {
		r, err := startRelay(relayTo)
		if err != nil {
			return err
		}
		defer r.close()
		f.relay = r
	}
	return serve(addr, f)
}

// serve listens on addr, which must be a loopback address, and serves f
// until the process is killed.
func serve(addr string, f *floor) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-addr %q: want a loopback IP address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(os.Stdout, "listening http://%s/mcp\n", ln.Addr())
	hs := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	return hs.Serve(ln)
}

// request is the part of a JSON-RPC request the floor reads.
type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		ProtocolVersion string `json:"protocolVersion"`
		Name            string `json:"name"`
		Arguments       struct {
			Text *string `json:"text"`
		} `json:"arguments"`
	} `json:"params"`
}

// ServeHTTP answers a GET with a stream of list_changed events and a POST
// as vigil would, for the methods the benchmarks send.
func (f *floor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		f.stream(w, r)
	case http.MethodPost:
		f.post(w, r)
	default:
		http.Error(w, "GET or POST only", http.StatusMethodNotAllowed)
	}
}

// post answers one POST as vigil would.
func (f *floor) post(w http.ResponseWriter, r *http.Request) {
	var req request
	var body []byte // read whole for a relay, which writes it on
	var err error
	if f.relay == nil {
		err = json.NewDecoder(r.Body).Decode(&req)
	} else if body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, maxRelayed)); err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || req.JSONRPC != "2.0" {
		http.Error(w, "not a JSON-RPC message", http.StatusBadRequest)
		return
	}
	if len(req.ID) == 0 {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	out := make([]byte, 0, 256)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, req.ID...)
	switch {
	case req.Method == "initialize":
		sid, err := sessionID()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		version, _ := json.Marshal(req.Params.ProtocolVersion) // a string always encodes
		out = append(out, `,"result":{"protocolVersion":`...)
		out = append(out, version...)
		out = append(out, `,"capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"vigil","version":"dev"}}}`...)
		w.Header().Set("Mcp-Session-Id", sid)
	case f.relay != nil && req.Method == "tools/call":
		answer, err := f.relay.call(body, req.ID)
		if err != nil {
			http.Error(w, "relay: "+err.Error(), http.StatusBadGateway)
			return
		}
		out = answer
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			w.Header().Set("Mcp-Session-Id", sid)
		}
	case req.Method == "tools/call" && req.Params.Name == "echo" && req.Params.Arguments.Text != nil:
		text, _ := json.Marshal(*req.Params.Arguments.Text) // a string always encodes
		if r.Header.Get("MCP-Protocol-Version") == protocol.Version20260728 {
			out = append(out, `,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"vigil","version":"dev"}},"content":[{"type":"text","text":`...)
			out = append(out, text...)
			out = append(out, `}],"resultType":"complete"}}`...)
		} else {
			out = append(out, `,"result":{"content":[{"type":"text","text":`...)
			out = append(out, text...)
			out = append(out, "}]}}"...)
		}
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			w.Header().Set("Mcp-Session-Id", sid)
		}
	case req.Method == "tools/call" && req.Params.Name == triggerTool:
		f.changed.broadcast()
		out = append(out, `,"result":{"content":[{"type":"text","text":"The tool list changed"}]}}`...)
	default:
		http.Error(w, "the floor answers initialize, tools/call echo and "+triggerTool+" only", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// maxRelayed bounds the body of a POST a relay reads.
const maxRelayed = 1 << 20

// sessionID returns a random session id, as vigil's are: 16 bytes in
// unpadded URL-safe base64.
func sessionID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", errors.Join(errors.New("session id"), err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
