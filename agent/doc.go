// Package agent is a2aWebCap's agent runtime: rule-driven agents that own their state, remember
// with provenance, change their own policy only through checked proposals, and serve as A2A
// agents. It needs no language model, and can use one.
//
// # Definitions and instances
//
// A [Definition] (policy template, tools, model, read-only operator knowledge) is shared; a
// [Host] gives each [Principal] (tenant and authenticated user; anonymous callers are one
// principal) an instance of its own, loaded from the [Store] on first use and evicted when idle.
// Nothing of one instance reaches another's memory, recall or model prompt. [Executor] serves a
// host over A2A, each caller its own instance; [New] is one instance of a private host.
//
// # Monad
//
// An instance is an actor. One goroutine owns its state; the only way in is its mailbox:
// [Agent.Send] posts an [Event] (an observation from a user, a tool or another agent) and
// [Agent.Ask] posts one and waits for the [Run] it caused. No exported API writes the agent's
// memory: what [Agent.Recall] and [Agent.View] return are copies. The agent integrates each
// event by its own rules, and those rules decide what it remembers.
//
// # Turns and effects
//
// A turn integrates one event and everything it causes. Model consults and tool calls are
// effects: the turn hands the state back to the instance while they run and integrates their
// results as observations when they come back, so one slow model holds up neither the instance
// nor anyone else. Turns of one session (Context.Session) keep their order; others run side by
// side. A [Limiter] bounds concurrent model calls, per server and per principal, in FIFO order
// ([EntryQueued]). A tool may ask the user mid-turn ([AskUser]). A turn's writes and its
// [TurnRecord] commit in one store transaction ([Store.Commit]) or not at all: a failed or
// canceled turn leaves no memory. Concurrent turns see what is committed plus their own writes.
//
// # Policy as data
//
// A [Policy] is a list of [Rule]s: a predicate in CEL over the event and the agent's state, an
// [Action] from a fixed set, and parameters (CEL expressions of type string). Axioms (identity,
// safety) are frozen. Mutable rules change only by a [Proposal], which carries the change, a
// justification and the observations behind it; [Agent.Propose] compiles and type-checks it
// under a CEL cost limit, replays the agent's recent observations under the old and the new
// policy and reports the difference, rate-limits edits, and applies it as a new policy version
// that [Agent.Rollback] undoes. Proposals that touch an axiom or the validation limits are
// refused with [ErrFrozen].
//
// A rule's class is its action. Limits.Approval names the actions whose rules change only with
// a human's approval: a proposal that passes every check but adds, replaces or removes such a
// rule is held as a [Review] (Decision.Pending is its ID), saved in the store, and applied only
// by [Agent.Approve], which re-checks it against the policy then in force and records the
// approver in the new [PolicyVersion]; [Agent.Reject] records who refused it and why. Like
// every limit, Limits.Approval is frozen.
//
//	text     string            the event's text
//	command  string            its first word, lower-cased
//	args     string            the rest, trimmed
//	kind     string            the event's kind ("message", "tool-result", ...)
//	source   string            "user", "tool", "agent" or "self"
//	data     map(string,string) the event's data
//	self     string            the agent's name
//	pending  string            the subject of the question this task is waiting on, or ""
//	goals    list(string)      the open goals, oldest first
//	state    map(string,int)   observations, working, beliefs, goals, fired (rules fired so far),
//	                            model (1 when the agent has a model, else 0)
//	last     map(string,string) the previous action's result in this run: action, status,
//	                            subject, value, previous, result (all present, "" when unset)
//
// # Memory in layers
//
// The observation log is append-only. Working memory holds recent notes, bounded in size and
// age, and a note used often enough is promoted to a long-term [Belief]. Every belief carries a
// [Provenance]: source, the observations behind it, confidence, context and reason; so does
// every [Goal]. A
// correction supersedes a belief (the old one stays, linked both ways); a contradiction demotes
// it (lower confidence, disputed); corroboration raises it. Recall ranks by text match,
// recency and salience. A [Store] keeps every instance: [NewMemoryStore] in memory, package
// agent/sqlitestore in SQLite, agent/pgstore in PostgreSQL.
//
// # Language models
//
// A model is optional. With [Options.Model] set, a rule with the [Consult] action hands it the
// message with a working context assembled from the memory layers — identity and axioms,
// relevant beliefs with their provenance, working memory, recent observations — within
// Limits.ContextTokens by [EstimateTokens] (bytes/4), the lowest-priority layers dropped first.
// The model's answer streams in as [EntryText] entries; its tool calls run only through the
// agent's granted tools (an unknown name is refused back to the model, never executed), each
// logged as a call and a result, and go back to it for at most Limits.ModelSteps rounds. The
// model never writes memory: tool results and its answer are observations (from the tool, and
// from agent "model") that the rules integrate. [Assistant] is a policy that uses a model when
// there is one and works rule-only otherwise; package agent/llm is a model for
// OpenAI-compatible endpoints.
//
// # Bridge
//
// [Executor] makes a host an a2asrv.AgentExecutor: a turn's working log becomes A2A events
// (thoughts, calls and steps as working status updates with typed metadata under [MetaKey],
// action results as artifacts, a model's streamed text as chunks of an "answer" artifact, a question as input-required, the end as a terminal status).
// [Notes] is a ready note-taking agent whose behaviour comes entirely from its rules.
//
//	a, _ := agent.New(ctx, "notes", &agent.Options{Policy: agent.Notes()})
//	defer a.Close()
//	run, _ := a.Ask(ctx, agent.UserText("remember the sky is blue"))
//	fmt.Println(run.Reply) // Noted: the sky is blue.
package agent
