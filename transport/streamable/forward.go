package streamable

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// A 2026-07-28 task lives on the replica that created it; its requests
// that reach another replica are forwarded to it over the cluster (see
// Forwarder), and answered as that replica answers them.

// forwardTimeout bounds the wait for a forwarded request's answer.
const forwardTimeout = 10 * time.Second

// forwarded is a forwarded HTTP request, or its answer.
type forwarded struct {
	Host   string              `json:"host,omitempty"`
	Status int                 `json:"status,omitempty"`
	Header map[string][]string `json:"header"`
	Body   []byte              `json:"body"`
}

// taskReplica returns the replica that runs the task a 2026-07-28 task
// request names, when the Endpoint shares its sessions and it is another
// replica than this one.
func (h *Endpoint) taskReplica(req *transport.Request) (string, bool) {
	f, ok := h.cfg.cluster.(Forwarder)
	if !ok {
		return "", false
	}
	switch req.Method {
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return "", false
	}
	var v [1][]byte
	transport.SplitObjectInto(v[:], req.Params, "taskId")
	id, ok := transport.DecodeString(v[0])
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
	fw := h.cfg.cluster.(Forwarder)
	out := forwarded{Host: r.Host, Header: map[string][]string(r.Header.Clone()), Body: body}
	data, err := json.Marshal(out)
	if err != nil {
		h.reject(w, http.StatusInternalServerError, req.ID, protocol.CodeInternal, protocol.RejectOther, "cannot forward the request")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), forwardTimeout)
	defer cancel()
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

// serveForwarded answers a request another replica forwarded: it is served
// by the handler of the MCP endpoint (see SetForwardHandler), as if the
// load balancer had sent it here.
func (h *Endpoint) serveForwarded(ctx context.Context, data []byte) []byte {
	var in forwarded
	if err := json.Unmarshal(data, &in); err != nil {
		return nil
	}
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", bytes.NewReader(in.Body))
	r.Header = http.Header(in.Header)
	r.Host = in.Host
	r.RemoteAddr = "127.0.0.1:0" // forwarded by a replica over the cluster
	rec := httptest.NewRecorder()
	target := http.Handler(h)
	if p := h.forwardTo.Load(); p != nil {
		target = *p
	}
	target.ServeHTTP(rec, r)
	res := rec.Result()
	out, _ := json.Marshal(forwarded{Status: res.StatusCode, Header: map[string][]string(res.Header), Body: rec.Body.Bytes()})
	return out
}

// SetForwardHandler makes h serve the requests other replicas forward to
// this Endpoint, instead of the Endpoint itself: the handler in front of
// it, such as an authorization guard, so that a forwarded request passes
// every check a request from the load balancer passes. It matters only
// with a [Forwarder] cluster.
func (h *Endpoint) SetForwardHandler(handler http.Handler) { h.forwardTo.Store(&handler) }
