package streamable

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// A task lives on the replica that created it (its id starts with the
// replica's name, see server.WithTaskIDPrefix); its requests that reach
// another replica are forwarded to it over the cluster (see Forwarder), and
// answered as that replica answers them: a 2026-07-28 task's tasks/get,
// tasks/update and tasks/cancel, and a 2025 session's tasks/get,
// tasks/result and tasks/cancel (the session's view on the task's replica
// is held while the task runs, see transport.Shared's Hold). A forwarded
// request carries no credentials, and no header the Endpoint does not read:
// its principal travels as an assertion (see WithGuard).

// forwardTimeout bounds the wait for a forwarded request's answer, but
// for tasks/result, which waits for the task: its wait ends when the
// client leaves, or when the task's replica is found gone (its lease is
// checked every forwardAliveEvery).
const (
	forwardTimeout    = 10 * time.Second
	forwardAliveEvery = 2 * time.Second
)

// maxRemoteAddr bounds the client address a forwarded request names (an
// IPv6 address with a zone and a port is shorter).
const maxRemoteAddr = 128

// maxForwardedPath bounds the path a forwarded request names.
const maxForwardedPath = 1024

// forwarded is a forwarded HTTP request, or its answer. A request carries
// no credentials (see forwardedHeader): its principal travels as the
// assertion of the guard (WithGuard), and Remote is its client's address
// (the caller of its quotas when it has no principal). Path is the path
// the client sent it to (the guard's scopes may depend on it: a gateway
// catalog's endpoint, /mcp/NAME); without one, /mcp.
type forwarded struct {
	Host      string              `json:"host,omitempty"`
	Path      string              `json:"path,omitempty"`
	Remote    string              `json:"remote,omitempty"`
	Status    int                 `json:"status,omitempty"`
	Header    map[string][]string `json:"header"`
	Body      []byte              `json:"body"`
	Assertion []byte              `json:"assertion,omitempty"`
}

// forwardedKey marks the context of a request another replica forwarded,
// which passed the Host and Origin checks there.
type forwardedKey struct{}

// isForwarded reports whether r is a request another replica forwarded.
func isForwarded(r *http.Request) bool { return r.Context().Value(forwardedKey{}) != nil }

// forwardedHeader returns the headers of a forwarded request that serve it:
// those the Endpoint reads (the Mcp-* headers among them) and the trace
// context. Never Authorization, Cookie or anything else a client sent: a
// request forwarded through the cluster must not hand its credentials to
// whoever reads the cluster's messages.
func forwardedHeader(in http.Header) map[string][]string {
	out := make(map[string][]string, len(in))
	for k, vs := range in {
		switch ck := http.CanonicalHeaderKey(k); {
		case ck == headerContentType, ck == headerAccept, ck == "Last-Event-Id",
			ck == "Traceparent", ck == "Tracestate", strings.HasPrefix(ck, "Mcp-"):
			out[ck] = slices.Clone(vs)
		}
	}
	return out
}

// taskReplica returns the replica that runs the task a task
// request names, when the Endpoint shares its sessions and it is another
// replica than this one.
func (h *Endpoint) taskReplica(req *transport.Request) (string, bool) {
	f, ok := h.cfg.cluster.(replication.Forwarder)
	if !ok {
		return "", false
	}
	switch req.Method {
	case "tasks/get", "tasks/update", "tasks/cancel", "tasks/result":
	default:
		return "", false
	}
	v, _ := req.Members()
	id, ok := jsonscan.DecodeString(v.TaskID)
	if !ok {
		return "", false
	}
	replica, _, found := strings.Cut(id, ".")
	if !found || replica == "" || replica == f.Replica() {
		return "", false
	}
	return replica, true
}

// forward serves a task request by forwarding it to replica and writing
// its answer; when the replica does not answer, the task is lost with it.
func (h *Endpoint) forward(w http.ResponseWriter, r *http.Request, req *transport.Request, body []byte, replica string) {
	fw := h.cfg.cluster.(replication.Forwarder)
	out := forwarded{Host: r.Host, Path: r.URL.Path, Remote: r.RemoteAddr, Header: forwardedHeader(r.Header), Body: body}
	if h.cfg.guard != nil {
		out.Assertion = h.cfg.guard.AssertPrincipal(r)
	}
	data, err := json.Marshal(out)
	if err != nil {
		h.reject(w, http.StatusInternalServerError, req.ID, protocol.CodeInternal, protocol.RejectOther, "cannot forward the request")
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if req.Method != "tasks/result" {
		ctx, cancel = context.WithTimeout(ctx, forwardTimeout)
		defer cancel()
	} else if leases, ok := h.cfg.cluster.(replication.Leases); ok {
		go watchReplica(ctx, cancel, leases, replica)
	}
	answer, err := fw.Forward(ctx, replica, data)
	var in forwarded
	if err == nil {
		err = json.Unmarshal(answer, &in)
	}
	if err != nil || in.Status == 0 {
		h.cfg.logger.Warn("streamable: the replica of a task does not answer", "replica", replica, "error", err)
		writeError(w, http.StatusOK, req.ID, protocol.CodeServerBusy, fmt.Sprintf("server instance lost: the replica running the task (%s) does not answer", replica))
		return
	}
	for k, vs := range in.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(in.Status)
	_, _ = w.Write(in.Body)
}

// watchReplica cancels a forwarded request's wait once replica's lease is
// found expired, or when ctx ends.
func watchReplica(ctx context.Context, cancel context.CancelFunc, leases replication.Leases, replica string) {
	tick := time.NewTicker(forwardAliveEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if alive, err := leases.Alive(ctx, replica); err == nil && !alive {
				cancel()
				return
			}
		}
	}
}

// serveForwarded answers a request another replica forwarded: it is served
// by the handler of the MCP endpoint (the guard's wrap of it, see WithGuard), at
// the path it was sent to, as if the
// load balancer had sent it here, but for the Host and Origin checks, which
// it passed on that replica, and its credentials: its principal is the one
// its assertion names, if any (see WithGuard).
func (h *Endpoint) serveForwarded(ctx context.Context, data []byte) []byte {
	var in forwarded
	if err := json.Unmarshal(data, &in); err != nil {
		return nil
	}
	ctx = context.WithValue(ctx, forwardedKey{}, true)
	if h.cfg.guard != nil {
		ctx = h.cfg.guard.RestorePrincipal(ctx, in.Assertion)
	}
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", bytes.NewReader(in.Body))
	if strings.HasPrefix(in.Path, "/") && len(in.Path) <= maxForwardedPath {
		r.URL.Path = in.Path // the guard asks the scopes of the path the client chose
	}
	r.Header = forwardedHeader(in.Header)
	r.Host = in.Host
	if in.Remote != "" && len(in.Remote) <= maxRemoteAddr {
		r.RemoteAddr = in.Remote
	}
	rec := httptest.NewRecorder()
	h.forwardTo.ServeHTTP(rec, r)
	res := rec.Result()
	out, _ := json.Marshal(forwarded{Status: res.StatusCode, Header: map[string][]string(res.Header), Body: rec.Body.Bytes()})
	return out
}
