package session

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestInterruptComplete: messages that arrive while a turn streams wait, in order, and each
// runs as a turn of its own after the running one.
func TestInterruptComplete(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Interruption: InterruptComplete, Queue: 2})
	s.Offer(at(0), "t1", User("one"))
	d2, _ := s.Offer(at(1), "t2", User("two"))
	d3, _ := s.Offer(at(2), "t3", User("three"))
	if want := (Decision{Action: Queue, Turn: 1, Position: 1}); !cmp.Equal(d2, want) {
		t.Errorf("second message: %+v, want %+v", d2, want)
	}
	if d3.Action != Queue || d3.Position != 2 {
		t.Errorf("third message: %+v, want queued at 2", d3)
	}
	before := stored(t, s)
	if _, err := s.Offer(at(3), "t4", User("four")); !errors.Is(err, ErrBusy) {
		t.Errorf("a message past the queue = %v, want ErrBusy", err)
	}
	if stored(t, s) != before {
		t.Error("a refused message changed the session")
	}
	res := finish(t, s, at(4), "1")
	if res.Turn.Number != 1 || res.Turn.User.Content != "one" || res.Turn.Response.Content != "1" {
		t.Errorf("turn 1 = %+v: the running turn must not see the later messages", res.Turn)
	}
	if res.Next == nil || res.Next.Action != Start || res.Next.Turn != 2 || res.Next.Task != "t2" || res.Next.Message.Content != "two" {
		t.Fatalf("Next = %+v, want turn 2 for t2 started", res.Next)
	}
	if s.State() != Streaming {
		t.Errorf("State() = %s, want streaming (turn 2)", s.State())
	}
	res = finish(t, s, at(5), "2")
	if res.Next == nil || res.Next.Turn != 3 || res.Next.Task != "t3" {
		t.Fatalf("Next = %+v, want turn 3 for t3", res.Next)
	}
	res = finish(t, s, at(6), "3")
	if res.Next != nil || s.State() != Waiting {
		t.Errorf("after the queue: Next %+v, state %s", res.Next, s.State())
	}
	var got []string
	for _, tr := range s.Turns() {
		got = append(got, tr.User.Content+"→"+tr.Response.Content)
	}
	if want := []string{"one→1", "two→2", "three→3"}; !cmp.Equal(got, want) {
		t.Errorf("turns %v, want %v", got, want)
	}
}

// TestInterruptAbort: the first message cancels the running turn, which is recorded aborted
// with what it consumed; the message runs next; later messages queue without cancelling again.
func TestInterruptAbort(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Interruption: InterruptAbort})
	s.Offer(at(0), "t1", User("write a long essay"))
	s.Prepare("")
	d, _ := s.Offer(at(1), "t2", User("stop, just say hi"))
	if want := (Decision{Action: Cancel, Turn: 1, Position: 1}); !cmp.Equal(d, want) {
		t.Errorf("interrupting message: %+v, want %+v", d, want)
	}
	d, _ = s.Offer(at(2), "t3", User("and bye"))
	if d.Action != Queue || d.Position != 2 {
		t.Errorf("a second interruption: %+v, want queued (the cancel is already asked)", d)
	}
	// The runtime cancels; the turn ends aborted with what it had consumed.
	res, err := s.End(at(3), Outcome{Status: Aborted, Response: "Once upon", Usage: usage(50, 2), Error: "interrupted by task t2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Turn.Status != Aborted || res.Turn.Usage.Total() != 52 {
		t.Errorf("aborted turn = %+v", res.Turn)
	}
	if res.Next == nil || res.Next.Task != "t2" || res.Next.Turn != 2 {
		t.Fatalf("Next = %+v, want t2's turn", res.Next)
	}
	if w, _ := s.Prepare(""); len(w.Verbatim) != 0 {
		t.Errorf("the aborted turn is in the context: %+v", w)
	}
	res = finish(t, s, at(4), "hi")
	if res.Next == nil || res.Next.Task != "t3" {
		t.Fatalf("Next = %+v, want t3's turn", res.Next)
	}
	if s.Record().Used.In != 50+10 {
		t.Errorf("Used = %+v: the aborted attempt's tokens must count", s.Record().Used)
	}
}

// TestInterruptAbortLosesTheRace: the running turn completed before the cancel reached it;
// nothing is lost, the message runs next.
func TestInterruptAbortLosesTheRace(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Interruption: InterruptAbort})
	s.Offer(at(0), "t1", User("one"))
	s.Offer(at(1), "t2", User("two"))
	res := finish(t, s, at(2), "1")
	if res.Turn.Status != Completed || res.Next == nil || res.Next.Task != "t2" {
		t.Errorf("End() = %+v", res)
	}
}

// TestInterruptMerge: the running turn restarts with the new messages joined to its own; the
// tasks are recorded; it is one turn, with the attempts counted and every attempt charged.
func TestInterruptMerge(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Interruption: InterruptMerge})
	s.Offer(at(0), "t1", User("book a table for two"))
	s.Prepare("")
	d, _ := s.Offer(at(1), "t2", User("at eight"))
	if want := (Decision{Action: Restart, Turn: 1}); !cmp.Equal(d, want) {
		t.Errorf("first merge: %+v, want %+v", d, want)
	}
	d, _ = s.Offer(at(2), "t3", User("on the terrace"))
	if d.Action != Queue {
		t.Errorf("second merge before the restart: %+v, want Queue", d)
	}
	d, err := s.Restart(at(3), Outcome{Usage: usage(40, 3), Model: "m"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Decision{Action: Start, Turn: 1, Task: "t1", Merged: []string{"t2", "t3"},
		Message: User("book a table for two\n\nat eight\n\non the terrace")}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("Restart() (-want +got):\n%s", diff)
	}
	w, _ := s.Prepare("")
	if last := w.Messages[len(w.Messages)-1]; last.Content != want.Message.Content {
		t.Errorf("the restarted turn's context ends with %q", last.Content)
	}
	res := finish(t, s, at(4), "Booked.")
	tr := res.Turn
	if tr.Number != 1 || tr.Attempts != 2 || !cmp.Equal(tr.Merged, []string{"t2", "t3"}) || tr.Usage.In != 50 || tr.User.Content != want.Message.Content {
		t.Errorf("merged turn = %+v", tr)
	}
	if s.Last() != 1 || s.Record().Next != 2 {
		t.Errorf("a merge made more than one turn: last %d, next %d", s.Last(), s.Record().Next)
	}
	if _, err := s.Restart(at(5), Outcome{}, nil); !errors.Is(err, ErrNothing) {
		t.Errorf("Restart() with nothing merged = %v, want ErrNothing", err)
	}
}

// TestInterruptMergeLosesTheRace: the turn ended before the restart: the messages to merge
// become the next turn, joined.
func TestInterruptMergeLosesTheRace(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Interruption: InterruptMerge})
	s.Offer(at(0), "t1", User("one"))
	s.Offer(at(1), "t2", User("two"))
	s.Offer(at(2), "t3", User("three"))
	res := finish(t, s, at(3), "1")
	if res.Turn.User.Content != "one" {
		t.Errorf("turn 1 took in a message after the fact: %q", res.Turn.User.Content)
	}
	if res.Next == nil || res.Next.Task != "t2" || !cmp.Equal(res.Next.Merged, []string{"t3"}) || res.Next.Message.Content != "two\n\nthree" {
		t.Errorf("Next = %+v, want t2 and t3 joined", res.Next)
	}
	if _, err := s.Restart(at(4), Outcome{}, nil); !errors.Is(err, ErrNothing) {
		t.Errorf("a late Restart() = %v, want ErrNothing", err)
	}
}

// TestCloseRefusesWaitingMessages: closing a streaming session drains it and hands back every
// waiting message for the runtime to refuse.
func TestCloseRefusesWaitingMessages(t *testing.T) {
	t.Parallel()
	for _, mode := range []Interruption{InterruptComplete, InterruptAbort, InterruptMerge} {
		s := newSession(t, Config{Interruption: mode})
		s.Offer(at(0), "t1", User("one"))
		s.Offer(at(1), "t2", User("two"))
		res := s.Close(at(2), "operator")
		if len(res.Dropped) != 1 || res.Dropped[0].Task != "t2" || s.State() != Draining {
			t.Errorf("%s: Close() = %+v, state %s", mode, res, s.State())
		}
		res = finish(t, s, at(3), "1")
		if res.Next != nil || s.State() != Collapsed || s.Record().Collapse.Reason != ReasonClosed {
			t.Errorf("%s: after the last turn: %+v, state %s", mode, res, s.State())
		}
	}
}
