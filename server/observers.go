package server

import (
	"context"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Observers returns an [Observer] that tells each of obs, in order, about
// every event (to combine metrics, tracing and logging observers). Nil
// entries are skipped; with none left it returns [NopObserver], with one it
// returns that one. The result is as safe for concurrent use as its parts.
func Observers(obs ...Observer) Observer {
	var list multiObserver
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return NopObserver{}
	case 1:
		return list[0]
	}
	return list
}

// multiObserver fans every event out to its observers.
type multiObserver []Observer

func (m multiObserver) SessionStarted(ctx context.Context, s *Session) {
	for _, o := range m {
		o.SessionStarted(ctx, s)
	}
}

func (m multiObserver) SessionEnded(ctx context.Context, s *Session, cause error) {
	for _, o := range m {
		o.SessionEnded(ctx, s, cause)
	}
}

func (m multiObserver) RequestCancelled(ctx context.Context, req *Request, cause error) {
	for _, o := range m {
		o.RequestCancelled(ctx, req, cause)
	}
}

func (m multiObserver) ResponseDropped(ctx context.Context, req *Request, reason protocol.DropReason) {
	for _, o := range m {
		o.ResponseDropped(ctx, req, reason)
	}
}

func (m multiObserver) WriteFailed(ctx context.Context, s *Session, class protocol.DropReason, err error) {
	for _, o := range m {
		o.WriteFailed(ctx, s, class, err)
	}
}

func (m multiObserver) OutgoingFailed(ctx context.Context, s *Session, method string, err error) {
	for _, o := range m {
		o.OutgoingFailed(ctx, s, method, err)
	}
}

func (m multiObserver) HandlerPanicked(ctx context.Context, req *Request, value any, stack []byte) {
	for _, o := range m {
		o.HandlerPanicked(ctx, req, value, stack)
	}
}

func (m multiObserver) MessageRejected(ctx context.Context, s *Session, code protocol.Code, reason protocol.RejectReason) {
	for _, o := range m {
		o.MessageRejected(ctx, s, code, reason)
	}
}
