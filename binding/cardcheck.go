package binding

import (
	"context"
	"iter"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/internal/mediatype"
)

// cardChecks is a RequestHandler that refuses, before they reach the handler it wraps, the
// requests the served card says the agent does not take: a message with a part whose media
// type is not among the card's input modes (mediatype.Modes: the default input modes and every
// skill's) is ContentTypeNotSupportedError. Every binding serves the handler through it.
type cardChecks struct {
	a2asrv.RequestHandler
	modes []string
}

// cardChecksFunc is cardChecks for a handler that can also send without waiting (funcSender,
// which the capnweb binding looks for).
type cardChecksFunc struct {
	*cardChecks
	fs funcSender
}

// withCardChecks returns h behind the checks card implies, or h itself when there are none.
func withCardChecks(h a2asrv.RequestHandler, card *a2a.AgentCard) a2asrv.RequestHandler {
	modes := mediatype.Modes(card)
	if len(modes) == 0 {
		return h
	}
	c := &cardChecks{RequestHandler: h, modes: modes}
	if fs, ok := h.(funcSender); ok {
		return cardChecksFunc{cardChecks: c, fs: fs}
	}
	return c
}

func (c *cardChecks) check(req *a2a.SendMessageRequest) error {
	if req == nil {
		return nil // the handler refuses it
	}
	return mediatype.Check(req.Message, c.modes)
}

func (c *cardChecks) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	if err := c.check(req); err != nil {
		return nil, err
	}
	return c.RequestHandler.SendMessage(ctx, req)
}

func (c *cardChecks) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	if err := c.check(req); err != nil {
		return func(yield func(a2a.Event, error) bool) { yield(nil, err) }
	}
	return c.RequestHandler.SendStreamingMessage(ctx, req)
}

func (c cardChecksFunc) SendMessageFunc(ctx context.Context, req *a2a.SendMessageRequest, done func(a2a.SendMessageResult, error)) {
	if err := c.check(req); err != nil {
		done(nil, err)
		return
	}
	c.fs.SendMessageFunc(ctx, req, done)
}
