package session

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestTransitions takes every transition of the state machine (docs/sessions.md, "States").
func TestTransitions(t *testing.T) {
	t.Parallel()
	walled := Config{Budget: Budget{Wall: time.Minute}}
	tests := []struct {
		name  string
		cfg   Config
		steps func(t *testing.T, s *Session)
		want  State
	}{
		{"new is dormant", Config{}, func(*testing.T, *Session) {}, Dormant},
		{"dormant -open-> ready", Config{}, func(t *testing.T, s *Session) { s.Open(at(0)) }, Ready},
		{"dormant -message-> streaming", Config{}, func(t *testing.T, s *Session) {
			if _, err := s.Offer(at(0), "t1", User("hi")); err != nil {
				t.Fatal(err)
			}
		}, Streaming},
		{"ready -message-> streaming", Config{}, func(t *testing.T, s *Session) {
			s.Open(at(0))
			if _, err := s.Offer(at(1), "t1", User("hi")); err != nil {
				t.Fatal(err)
			}
		}, Streaming},
		{"streaming -end-> waiting", Config{}, func(t *testing.T, s *Session) { chat(t, s, at(0), "hi", "hello") }, Waiting},
		{"waiting -message-> streaming", Config{}, func(t *testing.T, s *Session) {
			chat(t, s, at(0), "hi", "hello")
			if _, err := s.Offer(at(1), "t2", User("again")); err != nil {
				t.Fatal(err)
			}
		}, Streaming},
		{"input-required ends the turn: waiting", Config{}, func(t *testing.T, s *Session) {
			s.Offer(at(0), "t1", User("remember x"))
			if _, err := s.End(at(1), Outcome{Status: InputRequired, Response: "What is x?", Usage: usage(1, 1)}, nil); err != nil {
				t.Fatal(err)
			}
		}, Waiting},
		{"streaming -close-> draining", Config{}, func(t *testing.T, s *Session) {
			s.Offer(at(0), "t1", User("hi"))
			s.Close(at(1), "bye")
		}, Draining},
		{"draining -end-> collapsed", Config{}, func(t *testing.T, s *Session) {
			s.Offer(at(0), "t1", User("hi"))
			s.Close(at(1), "bye")
			finish(t, s, at(2), "hello")
		}, Collapsed},
		{"streaming -wall time over-> draining", walled, func(t *testing.T, s *Session) {
			s.Offer(at(0), "t1", User("hi"))
			if res := s.Tick(at(61)); res.Collapse == nil || res.Collapse.Reason != ReasonWall {
				t.Fatalf("Tick() = %+v, want a wall-time collapse", res)
			}
		}, Draining},
		{"waiting -wall time over-> collapsed", walled, func(t *testing.T, s *Session) {
			chat(t, s, at(0), "hi", "hello")
			s.Tick(at(60))
		}, Collapsed},
		{"waiting -message after the wall time-> collapsed", walled, func(t *testing.T, s *Session) {
			chat(t, s, at(0), "hi", "hello")
			if _, err := s.Offer(at(60), "t2", User("again")); !errors.Is(err, ErrCollapsed) {
				t.Fatalf("Offer() = %v, want ErrCollapsed", err)
			}
		}, Collapsed},
		{"waiting -close-> collapsed", Config{}, func(t *testing.T, s *Session) {
			chat(t, s, at(0), "hi", "hello")
			s.Close(at(1), "")
		}, Collapsed},
		{"ready -close-> collapsed", Config{}, func(t *testing.T, s *Session) {
			s.Open(at(0))
			s.Close(at(1), "")
		}, Collapsed},
		{"dormant -close-> collapsed", Config{}, func(t *testing.T, s *Session) { s.Close(at(1), "") }, Collapsed},
		{"waiting -reset-> ready", Config{}, func(t *testing.T, s *Session) {
			chat(t, s, at(0), "hi", "hello")
			if err := s.Reset(at(1)); err != nil {
				t.Fatal(err)
			}
		}, Ready},
		{"streaming -budget spent at the end-> collapsed", Config{Budget: Budget{Turns: 1}}, func(t *testing.T, s *Session) {
			chat(t, s, at(0), "hi", "hello")
		}, Collapsed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSession(t, tt.cfg)
			tt.steps(t, s)
			if got := s.State(); got != tt.want {
				t.Errorf("State() = %s, want %s", got, tt.want)
			}
			if _, err := Load(s.Record(), s.Turns()); err != nil {
				t.Errorf("Load(Record(), Turns()) = %v", err)
			}
		})
	}
}

// TestRefusals: what each state refuses, with which error.
func TestRefusals(t *testing.T) {
	t.Parallel()
	streaming := func(t *testing.T) *Session {
		s := newSession(t, Config{})
		s.Offer(at(0), "t1", User("hi"))
		return s
	}
	collapsed := func(t *testing.T) *Session {
		s := newSession(t, Config{Budget: Budget{Turns: 1}})
		chat(t, s, at(0), "hi", "hello")
		return s
	}
	draining := func(t *testing.T) *Session {
		s := streaming(t)
		s.Close(at(1), "")
		return s
	}
	other := func(t *testing.T) *Session {
		o, _ := New("ctx-2", Config{})
		chat(t, o, at(0), "x", "y")
		return o
	}
	tests := []struct {
		name string
		make func(t *testing.T) *Session
		op   func(s *Session, o *Session) error
		want error
	}{
		{"send to collapsed", collapsed, func(s, _ *Session) error { _, err := s.Offer(at(5), "t", User("hi")); return err }, ErrCollapsed},
		{"send to draining", draining, func(s, _ *Session) error { _, err := s.Offer(at(5), "t", User("hi")); return err }, ErrDraining},
		{"reset while streaming", streaming, func(s, _ *Session) error { return s.Reset(at(5)) }, ErrBusy},
		{"reset collapsed", collapsed, func(s, _ *Session) error { return s.Reset(at(5)) }, ErrCollapsed},
		{"merge while streaming", streaming, func(s, o *Session) error { _, err := s.Merge(at(5), o, MergeTurns); return err }, ErrBusy},
		{"merge into collapsed", collapsed, func(s, o *Session) error { _, err := s.Merge(at(5), o, MergeTurns); return err }, ErrCollapsed},
		{"end with no turn", collapsed, func(s, _ *Session) error { _, err := s.End(at(5), Outcome{Status: Completed}, nil); return err }, ErrState},
		{"prepare with no turn", collapsed, func(s, _ *Session) error { _, err := s.Prepare(""); return err }, ErrState},
		{"end with a bad status", streaming, func(s, _ *Session) error { _, err := s.End(at(5), Outcome{Status: "done"}, nil); return err }, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tt.make(t)
			before := stored(t, s)
			err := tt.op(s, other(t))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if after := stored(t, s); after != before {
				t.Errorf("a refused operation changed the session:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// TestCollapsedErrorSaysWhy: the refusal of a send to a collapsed session names the session,
// the budget and the turn, and what to do.
func TestCollapsedErrorSaysWhy(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Budget: Budget{Tokens: 20}})
	chat(t, s, at(0), "hi", "hello") // 15 tokens
	chat(t, s, at(1), "hi", "hello") // 30: spent
	_, err := s.Offer(at(2), "t3", User("more"))
	var se *StateError
	if !errors.As(err, &se) || !errors.Is(err, ErrCollapsed) {
		t.Fatalf("Offer() = %v, want a *StateError matching ErrCollapsed", err)
	}
	for _, want := range []string{"ctx-1", "collapsed", "token budget spent at turn 2", "fork it or start a new context"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if se.Collapse.Reason != ReasonTokens || se.Collapse.Turn != 2 {
		t.Errorf("Collapse = %+v, want tokens at turn 2", se.Collapse)
	}
}

// TestRecover: a session stored while a turn ran is settled on load: the turn failed, its
// waiting messages refused.
func TestRecover(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{})
	chat(t, s, at(0), "one", "1")
	s.Offer(at(1), "t2", User("two"))
	s.Offer(at(2), "t3", User("three")) // queued
	l := roundTrip(t, s)
	if l.State() != Streaming {
		t.Fatalf("loaded State() = %s, want streaming", l.State())
	}
	res := l.Recover(at(100))
	if res.Turn.Number != 2 || res.Turn.Status != Failed || res.Turn.Response.Content != "" {
		t.Errorf("Recover().Turn = %+v, want turn 2 failed with no response", res.Turn)
	}
	if len(res.Dropped) != 1 || res.Dropped[0].Task != "t3" || res.Next != nil {
		t.Errorf("Recover() dropped %+v, next %+v; want t3 dropped and nothing started", res.Dropped, res.Next)
	}
	if l.State() != Waiting {
		t.Errorf("State() = %s, want waiting", l.State())
	}
	if res := l.Recover(at(101)); res.Turn.Number != 0 {
		t.Errorf("second Recover() recorded %+v", res.Turn)
	}
}

// TestRecoverKeepsAParkedTurn: a turn that waits for the user's answer (Park) survives a reload:
// Recover refuses only the messages that waited; Unpark gives the turn back to run again, and
// ending it ends the wait.
func TestRecoverKeepsAParkedTurn(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{})
	chat(t, s, at(0), "one", "1")
	s.Offer(at(1), "t2", User("delete it"))
	if err := s.Park(at(2), "May I?", "k"); err != nil {
		t.Fatal(err)
	}
	s.Offer(at(3), "t3", User("three")) // queued
	l := roundTrip(t, s)
	res := l.Recover(at(100))
	if res.Turn.Number != 0 || len(res.Dropped) != 1 || res.Dropped[0].Task != "t3" {
		t.Errorf("Recover() = %+v, want t3 dropped and no turn recorded", res)
	}
	want := &Parked{Task: "t2", Question: "May I?", Key: "k", At: at(2)}
	if got := l.Parked(); l.State() != Streaming || got == nil || *got != *want {
		t.Fatalf("after Recover(): state %s, Parked() = %+v; want streaming, %+v", l.State(), got, want)
	}
	cur, err := l.Unpark(at(101))
	if err != nil || cur.Number != 2 || cur.Task != "t2" || cur.User.Content != "delete it" || l.Parked() != nil {
		t.Fatalf("Unpark() = %+v, %v; Parked() = %+v", cur, err, l.Parked())
	}
	if _, err := l.Unpark(at(102)); !errors.Is(err, ErrNothing) {
		t.Errorf("a second Unpark() = %v, want ErrNothing", err)
	}
	l.Park(at(103), "Sure?", "k2")
	if res := finish(t, l, at(104), "deleted"); res.Turn.Number != 2 || l.Parked() != nil || l.State() != Waiting {
		t.Errorf("ending the turn: %+v, Parked() = %+v, state %s", res.Turn, l.Parked(), l.State())
	}
	if err := l.Park(at(105), "Now?", "k3"); err == nil {
		t.Error("Park() without a running turn succeeded")
	}
}

// TestLoadRefusesInconsistentRecords: a stored record that contradicts itself is refused.
func TestLoadRefusesInconsistentRecords(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{})
	chat(t, s, at(0), "one", "1")
	chat(t, s, at(1), "two", "2")
	good, turns := s.Record(), s.Turns()
	tests := []struct {
		name  string
		rec   func(r *Record)
		turns func([]Turn) []Turn
	}{
		{"version", func(r *Record) { r.Version = 2 }, nil},
		{"no ID", func(r *Record) { r.ID = "" }, nil},
		{"state", func(r *Record) { r.State = "sleeping" }, nil},
		{"next not after the last turn", func(r *Record) { r.Next = 2 }, nil},
		{"turns out of order", nil, func(ts []Turn) []Turn { return []Turn{ts[1], ts[0]} }},
		{"turn status", nil, func(ts []Turn) []Turn { ts[0].Status = "odd"; return ts }},
		{"streaming without a turn", func(r *Record) { r.State = Streaming }, nil},
		{"waiting with a running turn", func(r *Record) { r.Current = &Turn{Number: 3} }, nil},
		{"parked without a running turn", func(r *Record) { r.Parked = &Parked{Task: "t"} }, nil},
		{"collapsed without a reason", func(r *Record) { r.State = Collapsed }, nil},
		{"queue while waiting", func(r *Record) { r.Queue = []Pending{{Message: User("x")}} }, nil},
		{"resets out of order", func(r *Record) { r.Resets = []int{2, 1} }, nil},
		{"summary beyond the turns", func(r *Record) { r.Summary = &Summary{From: 1, Through: 5} }, nil},
		{"bad config", func(r *Record) { r.Config.Window = 10 }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec, ts := good.clone(), cloneAll(turns, Turn.clone)
			if tt.rec != nil {
				tt.rec(&rec)
			}
			if tt.turns != nil {
				ts = tt.turns(ts)
			}
			if _, err := Load(rec, ts); !errors.Is(err, ErrInvalid) {
				t.Errorf("Load() = %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := Load(good, turns); err != nil {
		t.Errorf("Load(good) = %v", err)
	}
}

// TestNewRefusesBadConfig: every configuration error is caught when the session is made.
func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Strategy: "magic"}, {Interruption: "ignore"}, {Window: 10}, {Window: -1}, {High: 0.4, Low: 0.5},
		{High: 1.5}, {Low: -0.1}, {SummaryTokens: 4000}, {Queue: 5000}, {Budget: Budget{Tokens: -1}},
		{Budget: Budget{Warn: 1}}, {Budget: Budget{Wall: -time.Second}},
	} {
		if _, err := New("x", cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%+v) = %v, want ErrInvalid", cfg, err)
		}
	}
	if _, err := New("", Config{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("New(\"\") = %v, want ErrInvalid", err)
	}
}
