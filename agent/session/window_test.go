package session

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// text40 is a 40-byte text: 10 tokens, 14 as a message; a turn of two is 28.
func text40(tag string) string { return fmt.Sprintf("%-40s", tag) }

// TestWindowIsRealChatMessages: a multi-turn context is the system message, then the turns as
// user/assistant messages, then the new message; failed and aborted turns are not in it.
func TestWindowIsRealChatMessages(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Strategy: Sliding})
	chat(t, s, at(0), "hi", "hello")
	s.Offer(at(1), "t", User("crash"))
	s.End(at(2), Outcome{Status: Failed, Usage: &Usage{}, Error: "boom"}, nil)
	chat(t, s, at(3), "how are you?", "fine")
	s.Offer(at(4), "t", User("and now?"))
	w, err := s.Prepare("You are a test agent.")
	if err != nil {
		t.Fatal(err)
	}
	want := []Message{
		{RoleSystem, "You are a test agent."},
		{RoleUser, "hi"}, {RoleAssistant, "hello"},
		{RoleUser, "how are you?"}, {RoleAssistant, "fine"},
		{RoleUser, "and now?"},
	}
	if diff := cmp.Diff(want, w.Messages); diff != "" {
		t.Errorf("Prepare().Messages (-want +got):\n%s", diff)
	}
	if !cmp.Equal(w.Verbatim, []int{1, 3}) || w.Omitted != nil {
		t.Errorf("Verbatim %v, Omitted %v; want [1 3], none", w.Verbatim, w.Omitted)
	}
	sum := 0
	for _, m := range w.Messages {
		sum += EstimateTokens(m.Content) + 4
	}
	if w.Tokens != sum || w.Limit != DefaultWindow {
		t.Errorf("Tokens %d (want %d), Limit %d", w.Tokens, sum, w.Limit)
	}
}

// TestSlidingAndForget: sliding drops the oldest turn at a time; forget lets the context grow
// until full, then keeps only the newest turn.
func TestSlidingAndForget(t *testing.T) {
	t.Parallel()
	// Window 100, an empty system text (4) and no message: 96 for turns of 28: three fit.
	want := map[Strategy][][]int{
		Sliding: {{1}, {1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 5}, {4, 5, 6}, {5, 6, 7}},
		Forget:  {{1}, {1, 2}, {1, 2, 3}, {4}, {4, 5}, {4, 5, 6}, {7}},
	}
	for strategy, views := range want {
		s := newSession(t, Config{Strategy: strategy, Window: 100})
		for n, view := range views {
			chat(t, s, at(n), text40(fmt.Sprint("u", n+1)), text40(fmt.Sprint("a", n+1)))
			w, err := s.Context("")
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(w.Verbatim, view) {
				t.Errorf("%s after turn %d: Verbatim %v, want %v", strategy, n+1, w.Verbatim, view)
			}
			var omitted []int
			for i := 1; i < view[0]; i++ {
				omitted = append(omitted, i)
			}
			if !cmp.Equal(w.Omitted, omitted) {
				t.Errorf("%s after turn %d: Omitted %v, want %v", strategy, n+1, w.Omitted, omitted)
			}
			if w.Tokens > w.Limit {
				t.Errorf("%s: %d tokens in a window of %d", strategy, w.Tokens, w.Limit)
			}
		}
	}
}

// TestContextChangesNothing: the context affordance is a pure read.
func TestContextChangesNothing(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{})
	chat(t, s, at(0), "hi", "hello", fact("b1", "x is y"))
	before := stored(t, s)
	a, _ := s.Context("sys")
	b, _ := s.Context("sys")
	if !cmp.Equal(a, b) || stored(t, s) != before {
		t.Error("Context() changed something")
	}
}

// TestNoRoom: a system message and message that do not fit fail the turn's preparation.
func TestNoRoom(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Window: 64})
	s.Offer(at(0), "t", User("hi"))
	if _, err := s.Prepare(strings.Repeat("x", 400)); !errors.Is(err, ErrNoRoom) {
		t.Errorf("Prepare(a huge system text) = %v, want ErrNoRoom", err)
	}
}

// TestCoherentWithoutSummary: with no summary, the coherent strategy lists the facts of turns it
// cannot show, and of shown turns whose text does not carry them, unless the system text does;
// every fact of the conversation is recoverable from the window.
func TestCoherentWithoutSummary(t *testing.T) {
	t.Parallel()
	s := newSession(t, Config{Strategy: Coherent, Window: 160})
	facts := []Fact{
		fact("b1", "the user's name is Alice"),
		fact("b2", "the meeting is on Tuesday"),
		fact("o3", "the room is 4B"),
		fact("b4", "the sky is blue"),
	}
	chat(t, s, at(0), text40("who am I?"), text40("you are Alice"), facts[0])
	chat(t, s, at(1), text40("when is it?"), text40("on Tuesday"), facts[1])
	chat(t, s, at(2), text40("where?"), text40("the room is 4B, second floor"), facts[2])
	chat(t, s, at(3), text40("sky?"), text40("blue"), facts[3])
	system := "Known: the sky is blue."
	w, err := s.Context(system)
	if err != nil {
		t.Fatal(err)
	}
	// 160 − 10 (system) leaves room for four turns of 28 plus the facts list (b1, b2, and only
	// those: o3 is in its turn's text, b4 in the system text).
	text := ""
	for _, m := range w.Messages {
		text += m.Content + "\n"
	}
	for _, f := range facts {
		if !Recoverable(f, text) {
			t.Errorf("fact %s is not recoverable from the window:\n%s", f.ID, text)
		}
	}
	var listed []string
	for _, f := range w.Facts {
		listed = append(listed, f.ID)
	}
	if !cmp.Equal(w.Verbatim, []int{1, 2, 3, 4}) || !cmp.Equal(listed, []string{"b1", "b2"}) {
		t.Errorf("Verbatim %v, facts %v; want [1 2 3 4], [b1 b2]", w.Verbatim, listed)
	}
	// A smaller window drops turns; their facts move into the list, never out of the window.
	s.rec.Config.Window = 100
	w, err = s.Context(system)
	if err != nil {
		t.Fatal(err)
	}
	listed = nil
	for _, f := range w.Facts {
		listed = append(listed, f.ID)
	}
	// 90 left: turns 3 and 4 (56) with b1 and b2 listed (26 with the header); o3 is still in
	// turn 3's text.
	if !cmp.Equal(w.Verbatim, []int{3, 4}) || !cmp.Equal(listed, []string{"b1", "b2"}) || !cmp.Equal(w.Omitted, []int{1, 2}) {
		t.Errorf("small window: Verbatim %v, facts %v, omitted %v", w.Verbatim, listed, w.Omitted)
	}
	if w.Tokens > w.Limit {
		t.Errorf("%d tokens in a window of %d", w.Tokens, w.Limit)
	}
	// Smaller still: no turn fits beside the facts, all of which are listed.
	s.rec.Config.Window = 64
	w, err = s.Context(system)
	listed = nil
	for _, f := range w.Facts {
		listed = append(listed, f.ID)
	}
	if err != nil || w.Verbatim != nil || !cmp.Equal(listed, []string{"b1", "b2", "o3"}) {
		t.Errorf("tiny window: Verbatim %v, facts %v, %v; want none, [b1 b2 o3]", w.Verbatim, listed, err)
	}
	// Too small for the facts alone: refused, never truncated.
	if _, err := s.Context(system + strings.Repeat(" ", 120)); !errors.Is(err, ErrNoRoom) {
		t.Errorf("Context() with no room for the facts = %v, want ErrNoRoom", err)
	}
}

func TestRecoverable(t *testing.T) {
	t.Parallel()
	f := fact("b1", "The sky is blue.")
	for text, want := range map[string]bool{
		"we noted that the sky is blue, and moved on": true,
		"THE SKY IS BLUE":     true,
		"the sky is not blue": false,
		"blue sky":            false,
		"the sky is bluer":    false,
		"":                    false,
	} {
		if got := Recoverable(f, text); got != want {
			t.Errorf("Recoverable(%q, %q) = %v, want %v", f.Text, text, got, want)
		}
	}
	if Recoverable(Fact{Text: "..."}, "...") {
		t.Error("a fact without words was recoverable")
	}
}
