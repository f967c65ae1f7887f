package binding_test

import (
	"context"
	"fmt"
	"iter"
	"net/http/httptest"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/binding"
)

type greeter struct{}

func (greeter) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("hello, "+ec.Message.Parts[0].Text())), nil)
	}
}

func (greeter) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

func Example() {
	ctx := context.Background()
	handler := a2asrv.NewHandler(greeter{})
	card := &a2a.AgentCard{Name: "greeter", Version: "1.0.0", Capabilities: a2a.AgentCapabilities{Streaming: true}}
	srv := httptest.NewServer(binding.NewHTTPHandler(handler, card, nil))
	defer srv.Close()

	// A client discovers the interfaces from the well-known card...
	resolved, err := agentcard.NewResolver(nil).Resolve(ctx, srv.URL)
	if err != nil {
		panic(err)
	}
	for _, in := range resolved.SupportedInterfaces {
		fmt.Println(in.ProtocolBinding, in.ProtocolVersion, in.URL[len(srv.URL):])
	}

	// ...and talks to one of them, here HTTP+JSON.
	client, err := a2aclient.NewFromCard(ctx, resolved, a2aclient.WithConfig(a2aclient.Config{
		PreferredTransports: []a2a.TransportProtocol{a2a.TransportProtocolHTTPJSON},
	}))
	if err != nil {
		panic(err)
	}
	defer client.Destroy()
	res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("world")),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.(*a2a.Message).Parts[0].Text())
	// Output:
	// urn:a2awebcap:capnweb:v1 1.0 /a2a/capnweb
	// JSONRPC 1.0 /a2a/jsonrpc
	// HTTP+JSON 1.0 /a2a/rest
	// hello, world
}
