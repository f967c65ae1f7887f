package agent

import (
	"context"
	"errors"
	"testing"
)

// Entries arrive while the run is still going: the tool is blocked until the test has seen the
// call entry.
func TestStreamIsLive(t *testing.T) {
	t.Parallel()
	seenCall := make(chan struct{})
	pol := &Policy{Rules: []Rule{{Name: "slow", When: `source == "user"`, Action: CallTool,
		Params: map[string]string{"tool": `"slow"`, "input": `text`}, Reason: "r"}}}
	slow := func(ctx context.Context, in string) (string, error) {
		<-seenCall
		return "done", nil
	}
	a := newNotes(t, "s", &Options{Policy: pol, Tools: map[string]Tool{"slow": slow}})
	var kinds []EntryKind
	for e, err := range a.Stream(t.Context(), UserText("go")) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, e.Kind)
		if e.Kind == EntryCall {
			close(seenCall)
		}
	}
	if len(kinds) == 0 || kinds[len(kinds)-1] != EntryEnd {
		t.Errorf("kinds = %v, want …, end", kinds)
	}
	// A consumer that stops early releases the agent.
	for range a.Stream(t.Context(), UserText("again")) {
		break
	}
	if _, err := a.Ask(t.Context(), UserText("still alive?")); err != nil {
		t.Errorf("Ask after an abandoned stream = %v", err)
	}
}

type failingStore struct{ Store }

var errDisk = errors.New("disk full")

func (failingStore) Commit(context.Context, Key, *Batch) error { return errDisk }

func TestStoreErrorsAreReported(t *testing.T) {
	t.Parallel()
	a := newNotes(t, "f", &Options{Store: failingStore{NewMemoryStore()}})
	var end Entry
	var last error
	for e, err := range a.Stream(t.Context(), UserText("remember a is b")) {
		if err != nil {
			last = err
			continue
		}
		end = e
	}
	if end.Kind != EntryEnd || end.Result["status"] != "failed" || !errors.Is(last, errDisk) {
		t.Errorf("end = %+v, err = %v, want a failed end and the store error", end, last)
	}
	if err := a.Send(t.Context(), UserText("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Ask(t.Context(), UserText("y")); !errors.Is(err, errDisk) {
		t.Errorf("Ask = %v, want the store error", err)
	}
}
