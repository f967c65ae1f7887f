// Package peer is the a2a capability: an agent of the runtime calling other A2A agents
// (docs/multi-agent.md, "Calling other agents: the a2a capability").
//
// It owns what a call to another agent does on the caller's side: finding the callee (by URL,
// or by skill among the agents the operator lists and a registry), connecting over the best
// binding its card lists (package client: capnweb first) through the SSRF guard (package
// netguard) with every URL checked against the capability's contract, streaming the callee's
// events into the caller's task with provenance (agent.RelayEvent), relaying the callee's
// questions to the caller's user (agent.AskUserWith) or answering them from the caller's own
// memory, canceling the callee's task when the caller's call ends early, returning the callee's
// final task as the call's result, an observation whose source is the callee
// (agent.ResultFrom), and stopping loops and runaway fan-out (hops, chain and budget carried
// in each message's metadata).
//
//	s, err := peer.ParseSettings([]byte(`{"allow": ["https://research.example/*"]}`))
//	offer, err := peer.Offer(s, &peer.Options{Self: "https://writer.example/"})
//	catalog.Add(offer) // then rules call "a2a.call", the model "a2a__call"
//
// Each holder (one agent instance, so one principal) has its own capability: its own
// connections, kept a minute after a call, and its own callee tasks, which only it may
// continue.
package peer
