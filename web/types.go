package web

import _ "embed"

// TypesPath is where, relative to the page, [Types] is served: the TypeScript declarations of
// the capnweb binding (docs/web.md, "TypeScript types").
const TypesPath = "a2awebcap.d.ts"

//go:embed a2awebcap.d.ts
var types []byte

// Types returns web/a2awebcap.d.ts: TypeScript types of the capnweb binding's objects
// (A2AService, AgentSession, TaskHandle, Session, PushSubscription, …) and of the A2A 1.0
// shapes they take and return, for use with npm capnweb's own types.
func Types() []byte { return types }
