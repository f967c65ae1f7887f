// Package capnweb implements Cap'n Web, the JSON object-capability RPC protocol with promise
// pipelining, wire-compatible with the official JavaScript library (capnweb 0.12 on npm).
//
// A Session is one end of a connection. Either end may offer a main object and call the
// other's: the protocol is symmetric. Sessions run over a WebSocket (Dial, Handler), an HTTP
// batch (NewBatchSession, Handler), an in-memory Pipe, or any Transport.
//
// # Exposing Go values
//
// A struct that embeds Target is passed by reference: the peer gets a stub and calls its
// exported methods under lowerCamelCase names (GetUser is "getUser"). A Go func is passed by
// reference too, as a callable stub. Everything else is copied. See Target for the method
// signatures allowed, getters, and the Dispose hook.
//
//	type Calculator struct{ capnweb.Target }
//
//	func (Calculator) Add(a, b float64) float64 { return a + b }
//
//	http.Handle("/rpc", capnweb.NewHandler(func(*http.Request) (any, error) {
//		return &Calculator{}, nil
//	}, nil))
//
// Calls start in the order they arrive. A method that is about to block calls Blocking, so
// the calls behind it need not wait; one whose answer comes from another goroutine returns a
// Deferred instead, and holds no goroutine while it waits.
//
// # Calling the peer
//
// Calls return a *Promise at once. Calls and property reads on a promise pipeline: they travel
// before the result exists, so dependent calls cost one round trip. Await (or Decode) waits.
//
//	s, err := capnweb.Dial(ctx, "ws://host/rpc", nil, nil)
//	user := s.Main().Call("authenticate", token).Call("getUser") // no round trip yet
//	name, err := user.Get("name").Await(ctx)                      // one round trip
//
// Pass a func or a Target as an argument and the peer can call it back. Map runs a mapper on
// the peer's side over an array result, again without a round trip per element.
//
// # Values
//
// Received values use these Go types: nil (null), Undefined, bool, float64 (numbers, including
// ±Inf and NaN), string (UTF-8; a lone UTF-16 surrogate, which a JavaScript string may hold,
// in the three bytes WTF-8 gives it, and sent back as the same surrogate), []any (arrays),
// Object (objects: their properties in order, kept when sent back), *big.Int (bigint),
// time.Time and InvalidDate (Date), []byte (Uint8Array) and TypedBytes (other byte
// containers), *Error (Error), *url.URL, http.Header, *Request, *Response, Blob, *Stub
// (capabilities), *ReadableStream and *WritableStream. Sent values may also be any Go number
// type, structs (encoded as objects with encoding/json field names, in field order), maps with
// string keys (encoded with their keys sorted: Go maps have no order), slices, pointers,
// funcs and targets, and json.RawMessage: the JSON value it holds, sent without building it
// from maps and slices (the peer receives what it would for the same value built so; it must be
// valid UTF-8 JSON, or the call fails with a TypeError). Decode converts received values into
// typed Go values; method parameters are converted the same way. Decoding into a
// json.RawMessage gives a value's JSON. Asked for that way — Promise.Decode into a
// json.RawMessage, or a method parameter of that type — a value that arrives as plain data
// (objects, arrays, strings, numbers, booleans, null) is read off the message as the JSON text
// it came in, without building maps and slices at all: the cheap way to hand a result to
// encoding/json or to forward it.
//
// # Ownership
//
// Stubs and promises hold references on the peer: Release them when done (a forgotten one is
// released when garbage collected). Stubs received as arguments belong to the call; Dup one to
// keep it. Stubs in an awaited result belong to the caller.
//
// # Safety
//
// Every input is bounded (Limits): message size, nesting depth, bigint digits and running
// calls; and so is the memory a session holds for its peer (Limits.MaxHeldBytes: its tables,
// unpulled and unreleased results, queued calls, unsent answers), alone and, through a Pool,
// together with other sessions. A peer that crosses a limit or breaks the protocol gets an
// abort message saying which, and its session ends (WebSocket close code 3000); other sessions
// are unaffected. SetLimits changes a session's limits from a method (after a login, say). Errors a method
// returns reach the peer as *Error values; other Go errors are sent as "internal error" unless
// Options.SendError says otherwise, so internal detail does not leak.
package capnweb
