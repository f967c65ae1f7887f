// Package session is the model of chat sessions (docs/sessions.md): a session is one A2A
// context of one agent instance, a persisted state machine whose turns are the record, and
// whose working context — what a model is given — is computed from the turns by a strategy,
// within budgets that warn and then end the session, never by quietly cutting it short.
//
// A [Session] is a plain value: no I/O, no goroutine, no lock. The agent runtime owns each
// session on its instance's goroutine and drives it with its turns:
//
//	s, _ := session.New("ctx-1", session.Config{Budget: session.Budget{Turns: 20}})
//	d, _ := s.Offer(now, "task-1", session.User("what is the capital of France?"))
//	// d.Action is Start: run turn d.Turn
//	w, _ := s.Prepare(system)  // w.Messages: system, then the turns as user/assistant pairs, then the message
//	res, _ := s.End(now, session.Outcome{Status: session.Completed, Response: "Paris.",
//		Usage: &session.Usage{In: 812, Out: 3}, Model: "m"}, prices)
//	// commit res.Turn with s.Record(); tell the user res.Warnings; run res.Next if set
//
// # States
//
// dormant → ready → streaming ↔ waiting, and draining → collapsed when a budget is spent or
// the session is closed ([State]). [Session.Offer] takes every new message: it starts a turn,
// or, while one streams, applies the session's [Interruption] strategy — queue the message,
// cancel the running turn, or restart it with the message merged in — so a message is never
// slipped into a half turn. A collapsed session refuses messages with a [*StateError] matching
// [ErrCollapsed]; the A2A bindings report it as UnsupportedOperationError.
//
// # Working context
//
// [Session.Prepare] gives the running turn its context as real chat messages within the window;
// [Session.Context] shows the one the next message would get. The [Strategy] decides what of
// the older conversation survives: [Sliding], [Forget], [Summarize] (a model-written summary made
// with hysteresis, between a high- and a low-water mark) and [Coherent] (the default: a summary
// may drop wording but never a fact a turn relied on; see [Recoverable]). Summaries are the one
// slow step: [Session.Plan] snapshots what to summarize, [Compact] runs a [Summarizer] on any
// goroutine, and [Session.Install] accepts the result only if it still applies and, under
// Coherent, lost nothing.
//
// # Budgets and affordances
//
// [Budget] bounds tokens, turns, cost (from the operator's [Prices]) and wall time; each warns
// once when little is left ([Warning]) and ends the session when spent ([Collapse]). The
// affordances are [Session.History], [Session.Context], [Session.Metrics], [Session.Reset],
// [Session.Fork] and [Session.Merge]. [Session.Record] and [Session.Turns] are the stored form,
// [Load] restores it, and [Session.Recover] settles a session stored in the middle of a turn.
package session
