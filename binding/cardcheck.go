package binding

import (
	"context"
	"iter"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/metadata"

	"github.com/a2awebcap/a2awebcap/internal/mediatype"
)

// cardChecks is a RequestHandler that holds the handler it wraps to what the served card says,
// on every binding:
//
//   - a message with a part whose media type is not among the card's input modes
//     (mediatype.Modes: the default input modes and every skill's) is refused with
//     ContentTypeNotSupportedError before it reaches the handler;
//   - GetExtendedAgentCard is UnsupportedOperationError unless the card declares
//     capabilities.extendedAgentCard (A2A 1.0 §3.3.4), and an extended card the handler gives
//     without supportedInterfaces gets the served card's, as the caller's binding knows them
//     (interfaces).
type cardChecks struct {
	a2asrv.RequestHandler
	modes    []string
	extended bool // the card declares capabilities.extendedAgentCard
	// interfaces returns the interfaces an extended card lists when the handler's lists none;
	// nil: it stays as it is.
	interfaces func(ctx context.Context) []*a2a.AgentInterface
}

// cardChecksFunc is cardChecks for a handler that can also send without waiting (funcSender,
// which the capnweb binding looks for).
type cardChecksFunc struct {
	*cardChecks
	fs funcSender
}

// withCardChecks returns h behind the checks card implies; interfaces may be nil.
func withCardChecks(h a2asrv.RequestHandler, card *a2a.AgentCard, interfaces func(context.Context) []*a2a.AgentInterface) a2asrv.RequestHandler {
	c := &cardChecks{RequestHandler: h, modes: mediatype.Modes(card), interfaces: interfaces}
	c.extended = card != nil && card.Capabilities.ExtendedAgentCard
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

func (c *cardChecks) GetExtendedAgentCard(ctx context.Context, req *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	if !c.extended {
		return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "this agent offers no extended card: its card does not declare capabilities.extendedAgentCard")
	}
	card, err := c.RequestHandler.GetExtendedAgentCard(ctx, req)
	if err != nil || card == nil || len(card.SupportedInterfaces) > 0 || c.interfaces == nil {
		return card, err
	}
	cp := *card
	cp.SupportedInterfaces = c.interfaces(ctx)
	return &cp, nil
}

// originKey is the context key of the scheme://host a request came to (withOrigin).
type originKey struct{}

// withOrigin records the origin of the request an extended card is asked for, for the
// interfaces of the HTTP bindings.
func withOrigin(ctx context.Context, origin string) context.Context {
	return context.WithValue(ctx, originKey{}, origin)
}

// httpInterfaces returns the interfaces the HTTP bindings list on an extended card: the served
// card's, completed with the origin of the request.
func httpInterfaces(cs *cardServer) func(context.Context) []*a2a.AgentInterface {
	return func(ctx context.Context) []*a2a.AgentInterface {
		origin, _ := ctx.Value(originKey{}).(string)
		return cs.interfaces(origin)
	}
}

// grpcInterfaces returns the interfaces the gRPC binding lists on an extended card: those of
// card with absolute URLs (the gRPC server does not know the HTTP origin the others are
// relative to) and, if none is gRPC, the gRPC interface at the address the call came to.
func grpcInterfaces(card *a2a.AgentCard) func(context.Context) []*a2a.AgentInterface {
	return func(ctx context.Context) []*a2a.AgentInterface {
		var out []*a2a.AgentInterface
		hasGRPC := false
		if card != nil {
			for _, in := range card.SupportedInterfaces {
				if in == nil || isPathOnly(in.URL) || in.URL == "" {
					continue
				}
				cp := *in
				if cp.ProtocolVersion == "" {
					cp.ProtocolVersion = a2a.Version
				}
				hasGRPC = hasGRPC || cp.ProtocolBinding == a2a.TransportProtocolGRPC
				out = append(out, &cp)
			}
		}
		if md, ok := metadata.FromIncomingContext(ctx); ok && !hasGRPC {
			if a := md.Get(":authority"); len(a) > 0 && a[0] != "" && !strings.ContainsAny(a[0], "/ ") {
				out = append(out, &a2a.AgentInterface{URL: a[0], ProtocolBinding: a2a.TransportProtocolGRPC, ProtocolVersion: Version10})
			}
		}
		return out
	}
}
