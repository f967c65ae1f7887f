// Package client is the Go client of A2A 1.0 agents: one API over every binding — a2aWebCap's
// capnweb binding (docs/capnweb-binding.md), JSON-RPC, HTTP+JSON and gRPC.
//
// # Connecting
//
// New reads the agent card at agentURL (its /.well-known/agent-card.json, or agentURL itself
// when it names a .json file) and connects over the best binding the agent lists and the client
// speaks, in this order: capnweb over a WebSocket, JSON-RPC, HTTP+JSON, gRPC. A binding that
// cannot connect (a proxy that refuses WebSockets, say) falls through to the next.
// Options.Binding forces one ("capnweb", "capnweb-batch", "jsonrpc", "rest", "grpc").
//
//	c, err := client.New(ctx, "http://127.0.0.1:8080", nil)
//	if err != nil { … }
//	defer c.Destroy()
//	fmt.Println("connected over", c.Binding())
//	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{
//		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")),
//	})
//
// A Client is an a2a-go *a2aclient.Client (every A2A operation, interceptors, the same types
// and sentinel errors on every binding) that also tells which binding it chose. Options.Header
// travels with every request of every binding — HTTP headers, the capnweb WebSocket upgrade,
// gRPC metadata — which is where credentials go.
//
// # Using capnweb from a2a-go
//
// WithCapnwebTransport registers the capnweb binding with a2a-go's client factory, so a program
// that builds its clients with a2aclient.NewFromCard gets capnweb by adding one option:
//
//	c, err := a2aclient.NewFromCard(ctx, card, client.WithCapnwebTransport(nil))
//
// # What the capnweb transport does
//
// Every operation is the AgentSession method of the same name, called on the connection's main
// object; requests and results are the ProtoJSON objects of a2a-go's JSON encoding, and the
// call's service parameters (A2A-Version, A2A-Extensions, …) go as the method's params
// argument. A failed call returns the a2a-go error of its A2A code, so errors.Is(err,
// a2a.ErrTaskNotFound) works as on every other binding.
//
// Over a WebSocket (the default), one connection carries every call and stream. Streams arrive
// as a capnweb ReadableStream. When the connection drops in the middle of a stream, the
// transport redials (exponential backoff, bounded by CapnwebOptions.Reconnect and the caller's
// context) and resubscribes with Last-Event-ID set to the last event it delivered (each event's
// metadata["a2awebcap.seq"]): the server replays what was missed from its event log, so the
// caller's iterator goes on with no event lost or repeated. A SendStreamingMessage that dropped
// before its first event fails with ErrConnectionLost instead: the message may or may not have
// reached the agent, and it is never sent twice (a SubscribeToTask is simply sent again).
// Unary calls in flight when the connection drops fail with ErrConnectionLost too, for the
// same reason; the next call redials.
//
// Over HTTP batch (CapnwebOptions.Batch), each call is one POST and nothing stays open. A batch
// cannot carry a live stream: the server answers a streaming call with the events of up to its
// batch window (20 s), and while the stream is not over the transport asks for the rest with
// SubscribeToTask and Last-Event-ID (long polling). The caller sees the same events, in the same
// order, as over a WebSocket, only in bursts.
//
// Destroy closes the connection; streams still open end with ErrClosed.
package client
