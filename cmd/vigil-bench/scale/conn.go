package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
)

// keepAlive is one client's keep-alive HTTP/1.1 connection to an MCP
// endpoint, used from one goroutine: it writes each request itself and
// reads the answer with http.ReadResponse. An http.Client would run two
// more goroutines per connection and hand every request and answer
// between them; at 2,048 clients on the machine under test, that cost is
// the load generator's, not the server's, and takes CPU from the server.
type keepAlive struct {
	dialer net.Dialer
	addr   string // host:port
	head   []byte // the request line and headers up to Content-Length's value
	conn   net.Conn
	br     *bufio.Reader
	req    []byte // the request being sent, reused
}

// newKeepAlive returns a connection, not yet dialed, for POSTs of
// JSON-RPC messages to endpoint in session sid of version, dialed from
// the local address local ("": any).
func newKeepAlive(endpoint, sid, version, local string) (*keepAlive, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" {
		return nil, fmt.Errorf("endpoint %q: want an http:// URL", endpoint)
	}
	k := &keepAlive{addr: u.Host}
	if local != "" {
		k.dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	k.head = fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\nContent-Length: ",
		u.RequestURI(), u.Host, sid, version)
	return k, nil
}

// post sends body and reads the whole answer into buf (reset first),
// dialing first when the connection is not open. It returns the answer's
// status and headers; on an error, or an answer that closes the
// connection, the connection is closed and the next post dials again.
func (k *keepAlive) post(body []byte, buf *bytes.Buffer) (*http.Response, error) {
	if k.conn == nil {
		c, err := k.dialer.Dial("tcp", k.addr)
		if err != nil {
			return nil, err
		}
		k.conn = c
		if k.br == nil {
			k.br = bufio.NewReaderSize(c, 4096)
		} else {
			k.br.Reset(c)
		}
	}
	k.req = append(append(strconv.AppendInt(append(k.req[:0], k.head...), int64(len(body)), 10), "\r\n\r\n"...), body...)
	resp, err := k.roundTrip(buf)
	if err != nil || resp.Close {
		k.close()
	}
	return resp, err
}

func (k *keepAlive) roundTrip(buf *bytes.Buffer) (*http.Response, error) {
	if _, err := k.conn.Write(k.req); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(k.br, nil)
	if err != nil {
		return nil, err
	}
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	return resp, err
}

// close closes the connection, if open.
func (k *keepAlive) close() {
	if k.conn != nil {
		_ = k.conn.Close()
		k.conn = nil
	}
}
