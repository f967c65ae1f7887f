package session

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzLoad: a stored record and turns, however malformed (a damaged or hostile database), are
// either refused by Load or give a session every operation works on without panicking, whose
// contexts stay within the window.
func FuzzLoad(f *testing.F) {
	s := newSession(f, Config{Strategy: Coherent, Window: 200, Budget: Budget{Turns: 5}})
	chat(f, s, at(0), "hi", "hello", fact("b1", "x is y"))
	chat(f, s, at(1), "again", "yes")
	s.Reset(at(2))
	s.Offer(at(3), "t3", User("running"))
	s.Offer(at(4), "t4", User("queued"))
	add := func(s *Session) {
		rec, _ := json.Marshal(s.Record())
		turns, _ := json.Marshal(s.Turns())
		f.Add(rec, turns)
	}
	add(s)
	add(newSession(f, Config{}))
	f.Fuzz(func(t *testing.T, recJSON, turnsJSON []byte) {
		var rec Record
		var turns []Turn
		if json.Unmarshal(recJSON, &rec) != nil || json.Unmarshal(turnsJSON, &turns) != nil {
			return
		}
		s, err := Load(rec, turns)
		if err != nil {
			return
		}
		now := rec.Updated.Add(time.Second)
		check := func(w Window, err error) {
			if err == nil && w.Tokens > w.Limit {
				t.Fatalf("a context of %d tokens in a window of %d", w.Tokens, w.Limit)
			}
		}
		check(s.Context("system"))
		s.Metrics(now)
		s.History(0, 10)
		s.Plan("system")
		s.Recover(now)
		if d, err := s.Offer(now, "t", User("hello")); err == nil && d.Action == Start {
			check(s.Prepare("system"))
			if _, err := s.End(now, Outcome{Status: Completed, Response: "hi", Usage: &Usage{In: 1}}, nil); err != nil {
				t.Fatalf("End() = %v", err)
			}
		}
		if _, err := s.Fork(now, "fork", s.Last()); err != nil {
			t.Fatalf("Fork() = %v", err)
		}
		s.Reset(now)
		if _, err := Load(s.Record(), s.Turns()); err != nil {
			t.Fatalf("a session that loaded does not load again after operations: %v", err)
		}
	})
}
