package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// TurnStatus is how a turn ended.
type TurnStatus string

// Turn statuses. Completed and InputRequired turns answered: they count toward the turn budget
// and appear in the working context. The others stay in the history only.
const (
	Completed     TurnStatus = "completed"
	InputRequired TurnStatus = "input-required"
	Failed        TurnStatus = "failed"
	Canceled      TurnStatus = "canceled"
	Aborted       TurnStatus = "aborted"
)

func (st TurnStatus) answered() bool { return st == Completed || st == InputRequired }

func (st TurnStatus) valid() bool {
	switch st {
	case Completed, InputRequired, Failed, Canceled, Aborted:
		return true
	}
	return false
}

// TurnKind tells a turn of the conversation from an entry merged in from another session.
type TurnKind string

// Turn kinds.
const (
	// KindChat is a user message and its answer.
	KindChat TurnKind = ""
	// KindMerge holds another session's summary and facts, merged in ([MergeSummary]).
	KindMerge TurnKind = "merge"
)

// Origin is where something came from: the session a fork or a merged turn comes from, and the
// turn there (From and Through for a merged summary).
type Origin struct {
	Session string `json:"session"`
	Turn    int    `json:"turn,omitempty"`
	From    int    `json:"from,omitempty"`
	Through int    `json:"through,omitempty"`
	Task    string `json:"task,omitempty"`
}

// Turn is the record of one turn. Turns are never changed once recorded.
type Turn struct {
	// Number is the turn's place in the session: 1, 2, …, never reused, not even by a reset.
	Number int      `json:"number"`
	Kind   TurnKind `json:"kind,omitempty"`
	// Task is the A2A task that carried the message; Merged the tasks whose messages were
	// merged into it.
	Task     string     `json:"task,omitempty"`
	Merged   []string   `json:"merged,omitempty"`
	User     Message    `json:"user"`
	Response Message    `json:"response"`
	Status   TurnStatus `json:"status"`
	// Error says, in plain words, why a turn failed.
	Error   string    `json:"error,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// Latency is Ended − Started.
	Latency time.Duration `json:"-"`
	// Usage is what the turn's model calls consumed, every attempt included.
	Usage Usage  `json:"usage"`
	Model string `json:"model,omitempty"`
	// Cost is Usage priced by the operator's table; CostUnknown when the table had no price for
	// the model.
	Cost        Micros `json:"costMicros"`
	CostUnknown bool   `json:"costUnknown,omitempty"`
	// ContextBefore is the size in tokens of the working context the turn was answered from;
	// ContextAfter of the one the next turn starts from.
	ContextBefore int `json:"contextBefore"`
	ContextAfter  int `json:"contextAfter"`
	// Attempts is how many times the turn ran: more than 1 when merged messages restarted it.
	Attempts int `json:"attempts,omitempty"`
	// Facts are what the turn relied on or established.
	Facts  []Fact  `json:"facts,omitempty"`
	Origin *Origin `json:"origin,omitempty"`
}

type plainTurn Turn

type turnJSON struct {
	plainTurn
	Latency Duration `json:"latency"`
}

// MarshalJSON writes the latency as a ProtoJSON duration ("1.500s").
func (t Turn) MarshalJSON() ([]byte, error) {
	return json.Marshal(turnJSON{plainTurn(t), Duration(t.Latency)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *Turn) UnmarshalJSON(data []byte) error {
	var j turnJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*t = Turn(j.plainTurn)
	t.Latency = time.Duration(j.Latency)
	return nil
}

func (t Turn) clone() Turn {
	t.Merged = slices.Clone(t.Merged)
	t.Facts = slices.Clone(t.Facts)
	if t.Origin != nil {
		o := *t.Origin
		t.Origin = &o
	}
	return t
}

// eligible reports whether t appears in the working context: a turn that answered, or a merged
// summary.
func (t *Turn) eligible() bool { return t.Kind == KindMerge || t.Status.answered() }

// Outcome is how a turn ended, as the runtime reports it to [Session.End].
type Outcome struct {
	Status TurnStatus
	// Response is the agent's answer (for a turn that did not answer, what it had said, if
	// anything).
	Response string
	// Usage is what the model consumed, as it reported it. Nil means a model answered without
	// reporting usage: the session estimates it (the context it was given in, the response
	// out) and marks it estimated. A turn no model took part in has a zero Usage, not nil.
	Usage *Usage
	// Model is the model that answered, for the price table.
	Model string
	// Facts are the beliefs and observations the turn relied on or established.
	Facts []Fact
	// Error says, in plain words, why the turn failed.
	Error string
}

func validFacts(fs []Fact) error {
	if len(fs) > maxFacts {
		return fmt.Errorf("%w: %d facts in a turn, more than %d", ErrInvalid, len(fs), maxFacts)
	}
	for _, f := range fs {
		switch {
		case f.ID == "" || len(f.ID) > maxFactID:
			return fmt.Errorf("%w: a fact's ID must have 1 to %d bytes", ErrInvalid, maxFactID)
		case f.Kind != FactBelief && f.Kind != FactObservation:
			return fmt.Errorf("%w: fact %s has kind %q", ErrInvalid, f.ID, f.Kind)
		case len(f.Text) > maxFactText || normal(f.Text) == " ":
			return fmt.Errorf("%w: fact %s must say something, in at most %d bytes", ErrInvalid, f.ID, maxFactText)
		}
	}
	return nil
}

// dedupeFacts keeps the first fact of each ID, in order.
func dedupeFacts(fs []Fact) []Fact {
	seen := make(map[string]bool, len(fs))
	out := fs[:0:0]
	for _, f := range fs {
		if !seen[f.ID] {
			seen[f.ID] = true
			out = append(out, f)
		}
	}
	return out
}

// Pending is a message waiting for a running turn: queued to run after it, or to be merged
// into it.
type Pending struct {
	Task string `json:"task,omitempty"`
	// Merged are the tasks of messages merged into this one (a merge the running turn finished
	// before it could take in).
	Merged   []string  `json:"merged,omitempty"`
	Message  Message   `json:"message"`
	Received time.Time `json:"received"`
}

func (p Pending) clone() Pending {
	p.Merged = slices.Clone(p.Merged)
	return p
}

// Action is what the runtime must do about a message ([Session.Offer]).
type Action string

// Actions.
const (
	// Start: a turn began for the message; run it (Prepare, consult, End).
	Start Action = "start"
	// Queue: nothing to do now. The message waits for the running turn: it starts when End
	// returns it as Result.Next, or it joins the turn at the next Restart.
	Queue Action = "queue"
	// Cancel: cancel the running turn, then End it (Aborted, or however it ended first); the
	// message's turn then starts (Result.Next).
	Cancel Action = "cancel"
	// Restart: cancel the running turn's work and call Restart, which returns the turn to run
	// again with the message merged in.
	Restart Action = "restart"
)

// Decision is what the runtime must do about a message, and the turn concerned.
type Decision struct {
	Action Action `json:"action"`
	// Turn is the turn started (Start) or the running turn (the other actions).
	Turn int `json:"turn"`
	// Task and Merged are the tasks the started turn answers (Start).
	Task   string   `json:"task,omitempty"`
	Merged []string `json:"merged,omitempty"`
	// Message is the user message the started turn answers (Start).
	Message Message `json:"message,omitzero"`
	// Position is the message's place in the queue, 1 being next (Queue, Cancel).
	Position int `json:"position,omitempty"`
	// Warnings are budget warnings given as the message arrived (the wall-time budget).
	Warnings []Warning `json:"warnings,omitempty"`
}
