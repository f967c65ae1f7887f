package session_test

import (
	"fmt"
	"time"

	"github.com/a2awebcap/a2awebcap/agent/session"
)

// A session driven as the runtime drives it: a message starts a turn, the turn is prepared
// (the context as chat messages), ended with what the model said and used, and the budget
// ends the session at its second turn.
func Example() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	prices := session.Prices{"m": {Input: 0.15, Output: 0.60}}
	s, _ := session.New("ctx-1", session.Config{Budget: session.Budget{Turns: 2, Warn: 0.5}})

	turn := func(task, text, answer string) {
		d, err := s.Offer(now, task, session.User(text))
		if err != nil {
			fmt.Println("refused:", err)
			return
		}
		w, _ := s.Prepare("You are a geography tutor.")
		fmt.Printf("turn %d, context of %d messages:\n", d.Turn, len(w.Messages))
		for _, m := range w.Messages {
			fmt.Printf("  %s: %s\n", m.Role, m.Content)
		}
		now = now.Add(2 * time.Second)
		res, _ := s.End(now, session.Outcome{Status: session.Completed, Response: answer,
			Usage: &session.Usage{In: 1000, Out: 20}, Model: "m"}, prices)
		fmt.Printf("  -> %s in %v, cost %s\n", res.Turn.Status, res.Turn.Latency, res.Turn.Cost)
		for _, w := range res.Warnings {
			fmt.Println("  warning:", w.Text)
		}
		if res.Collapse != nil {
			fmt.Println("  collapsed:", res.Collapse.Reason)
		}
	}
	turn("task-1", "What is the capital of France?", "Paris.")
	turn("task-2", "And of Italy?", "Rome.")
	turn("task-3", "And of Spain?", "Madrid.")
	fmt.Println(s.State())
	// Output:
	// turn 1, context of 2 messages:
	//   system: You are a geography tutor.
	//   user: What is the capital of France?
	//   -> completed in 2s, cost 0.000162
	//   warning: the session's turns budget is running low: 1 of 2 used
	// turn 2, context of 4 messages:
	//   system: You are a geography tutor.
	//   user: What is the capital of France?
	//   assistant: Paris.
	//   user: And of Italy?
	//   -> completed in 2s, cost 0.000162
	//   collapsed: turns
	// refused: session ctx-1 is collapsed (turn budget spent at turn 2): fork it or start a new context
	// collapsed
}
