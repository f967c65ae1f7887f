// Package binding serves an A2A v1.0 agent — any [a2asrv.RequestHandler] —
// over the three standard protocol bindings of the A2A specification
// (JSON-RPC 2.0, HTTP+JSON/REST and gRPC) and over Cap'n Web, this project's
// binding (docs/capnweb-binding.md).
//
// # What a client sees
//
// [NewHTTPHandler] answers, on one port:
//
//	GET|HEAD /.well-known/agent-card.json  the agent card (Cache-Control, strong ETag, 304)
//	POST     /a2a/jsonrpc                  JSON-RPC 2.0; SSE for SendStreamingMessage, SubscribeToTask
//	*        /a2a/rest/...                 HTTP+JSON: /message:send, /tasks/{id}, ... and the
//	                                       tenant forms /{tenant}/message:send, /{tenant}/tasks/{id}, ...
//	GET|POST /a2a/capnweb                  Cap'n Web: a WebSocket session (GET upgrade) or one
//	                                       HTTP batch (POST); main object A2AService
//
// The paths are the card's own interface URLs when it lists them, else the
// defaults above (see [Options]). The card that is served lists every
// interface the process serves in its supportedInterfaces, in preference
// order: capnweb ([ProtocolCapnweb]) first, then those the given card already
// lists, then JSON-RPC, HTTP+JSON and, when [Options].GRPCAddress is set,
// gRPC, each with protocolVersion "1.0" (and "0.3" copies after them when
// [Options].Serve03 is set). Interface URLs the handler adds are completed from
// [Options].BaseURL, or from the scheme and Host of each card request.
//
// [NewGRPCServer] returns a *grpc.Server exposing lf.a2a.v1.A2AService (and,
// with [GRPCOptions].Serve03, the 0.3 a2a.v1.A2AService) for a listener of the
// caller's choice.
//
// # Authentication
//
// With [Options].Authenticate (and [GRPCOptions].Authenticate) every request
// is authenticated from its headers (gRPC metadata; for capnweb, the upgrade
// or batch request, or the object passed to authenticate) before it reaches
// the RequestHandler, which sees the principal as the CallContext's User — the
// engine scopes every task to it. A refusal is UNAUTHENTICATED (HTTP 401 with
// WWW-Authenticate naming each scheme the card declares, JSON-RPC -31401,
// codes.Unauthenticated) or, for an error wrapping a2a.ErrUnauthorized,
// UNAUTHORIZED (403, -31403, codes.PermissionDenied). The public agent card
// needs no credentials.
//
// [Options].LoginThrottle bounds failed authentications per source address
// and per claimed principal: past it, attempts are refused before
// Authenticate runs (429, reason LOGIN_THROTTLED).
//
// [Options].RateLimit bounds each principal's request rate, and [Options].Quotas
// what it holds at once (running tasks, open streams, capnweb pending calls):
// over either, HTTP 429 / JSON-RPC -32000 / codes.ResourceExhausted, with
// reason RATE_LIMITED or QUOTA_EXCEEDED. [Options].Capabilities shares capnweb
// revocations and saved sessions among replicas (docs/security.md).
//
// Every binding applies the same request checks before the request reaches
// the RequestHandler, and reports them with the error codes of the spec's
// error table (JSON-RPC code / HTTP status / gRPC status):
//
//   - A2A-Version (header, gRPC metadata, or for HTTP the A2A-Version query
//     parameter): "1.0" — patch digits ignored — is served; a request that
//     declares none is served as 1.0 (see [Options].EmptyVersion); "0.3" is
//     served through a2a-go's a2av0 compatibility layer when Serve03 is set;
//     anything else gets VersionNotSupportedError (-32009 / 400
//     FAILED_PRECONDITION / FAILED_PRECONDITION). The error's ErrorInfo
//     metadata lists the supported versions. A capnweb connection that
//     declares such a version (or lacks a required extension) still opens,
//     and its A2A calls fail with the error: a stock capnweb client would
//     not show a refused connection's error.
//   - A2A-Extensions: every extension the card marks required: true must be
//     declared, else ExtensionSupportRequiredError (-32008 / 400 / FAILED_PRECONDITION).
//     Comma-separated lists (the form the spec recommends) are split, so
//     [a2asrv.ExtensionsFrom] reports each URI separately.
//   - Body size: bodies over [Options].MaxBodyBytes (4 MiB by default) are
//     rejected before they are decoded: HTTP 413 on REST, a JSON-RPC
//     -32600 error on JSON-RPC, RESOURCE_EXHAUSTED on gRPC.
//   - Content-Type: a request body must be application/json or
//     application/a2a+json (any +json type); none, text/plain or a form type
//     gets ContentTypeNotSupportedError (-32005 / 415 INVALID_ARGUMENT). A
//     capnweb batch may also be text/plain, as the stock clients send it.
//   - Input modes: a message part whose media type the card does not accept
//     (its defaultInputModes and every skill's inputModes; a part without a
//     mediaType counts as text/plain, application/json or
//     application/octet-stream by its content) gets
//     ContentTypeNotSupportedError (-32005 / 400 INVALID_ARGUMENT /
//     INVALID_ARGUMENT). For gRPC the card is [GRPCOptions].Card; a card
//     without input modes refuses nothing (docs/a2a-server.md, "Input modes").
//   - Cross-site requests: a browser request from a page of another origin
//     (Sec-Fetch-Site, Origin) that is not a GET is refused, and so is a
//     request on a loopback address naming a Host that is not the server's
//     (DNS rebinding): 403 with reason CROSS_ORIGIN_REQUEST or
//     HOST_NOT_ALLOWED. [Options].AllowedOrigins lists the pages that may
//     call (with CORS), [Options].AllowedHosts extra names of the server
//     (docs/security.md, "Browsers"). The public card is exempt.
//   - Extended card: GetExtendedAgentCard is UnsupportedOperationError
//     unless the card declares capabilities.extendedAgentCard; an extended
//     card the handler gives without supportedInterfaces is served with the
//     public card's, for the caller's origin (over gRPC: the card's absolute
//     ones, else the gRPC interface called; docs/security.md).
//
// On the wire:
//
//   - REST responses carry Content-Type application/a2a+json when the
//     client's Accept header asks for it, else application/json (which every
//     JSON client reads, a2a-go's included, and the conformance kit expects);
//     JSON-RPC responses are application/json, as the spec says. A request
//     body that is not JSON gets 415 on REST.
//   - Every successful JSON-RPC response has a result, as JSON-RPC 2.0
//     requires: DeleteTaskPushNotificationConfig answers "result": {} (the
//     ProtoJSON of its google.protobuf.Empty; 0.3's delete answers null),
//     where a2a-go's handler sends neither result nor error.
//   - Streaming responses (SSE) carry a ": keep-alive" comment every
//     [Options].KeepAlive (15 s by default) so proxies keep idle streams open.
//   - An SSE event whose stream event carries its sequence number in its
//     task's event log, in its metadata under "a2awebcap.seq" (as the events
//     of this project's engine do), has that number as its SSE id
//     ("id: 7"); other events have no id line (a2a-go's random ids are
//     dropped). An SSE client that reconnects sends the last id back as
//     Last-Event-ID, which the engine's SubscribeToTask resumes from: a
//     browser's EventSource on GET .../tasks/{id}:subscribe does so by itself.
//   - A REST stream that fails before its first event (SubscribeToTask on an
//     unknown or finished task, say) is answered with the error's HTTP status
//     and a google.rpc.Status body instead of a 200 event stream holding the
//     error; a later failure is sent as an SSE event of type "error".
//
// The protocol work itself — decoding, method dispatch, SSE framing, error
// mapping — is a2a-go's ([a2asrv.NewJSONRPCHandler], [a2asrv.NewRESTHandler],
// [a2asrv.NewTenantRESTHandler], the a2agrpc adapter and the a2av0 compat
// handlers); this package routes to them and adds what they lack.
//
// # Example
//
//	handler := a2asrv.NewHandler(myExecutor)
//	card := &a2a.AgentCard{Name: "Echo", Version: "1.0.0",
//		Capabilities: a2a.AgentCapabilities{Streaming: true}}
//	srv := &http.Server{Addr: ":8080", Handler: binding.NewHTTPHandler(handler, card, &binding.Options{
//		BaseURL:     "https://agent.example.com",
//		GRPCAddress: "agent.example.com:8443",
//	})}
//	go srv.ListenAndServe()
//
//	lis, _ := net.Listen("tcp", ":8443")
//	go binding.NewGRPCServer(handler, &binding.GRPCOptions{Card: card}).Serve(lis)
//
// A client then resolves https://agent.example.com/.well-known/agent-card.json
// and picks any of the three interfaces; see the package example for a
// runnable round trip.
package binding
