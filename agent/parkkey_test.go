package agent

import (
	"encoding/json"
	"testing"

	"github.com/a2awebcap/a2awebcap/agent/capability"
)

// parkKey names an approval by what it approves, not by its ID or its words (which hold the
// ID): the same call asked again after a restart, under another ID, is the same question; another
// call is not. Other questions are named by their words.
func TestParkKey(t *testing.T) {
	t.Parallel()
	approval := func(id, args string) map[string]string {
		p := capability.Pending{ID: id, Kind: capability.PendingCall, Capability: "fs", Method: "write", Args: json.RawMessage(args)}
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{"approval": string(data)}
	}
	a1 := parkKey("Approve p1?", approval("p1", `{"path":"a"}`))
	if a2 := parkKey("Approve p7?", approval("p7", `{"path":"a"}`)); a2 != a1 {
		t.Errorf("the same call under two IDs: %q, %q", a1, a2)
	}
	if b := parkKey("Approve p1?", approval("p1", `{"path":"b"}`)); b == a1 {
		t.Errorf("two calls have one key %q", b)
	}
	if q1, q2 := parkKey("May I?", nil), parkKey("May I not?", nil); q1 == q2 || q1 != parkKey("May I?", map[string]string{}) {
		t.Errorf("questions by their words: %q, %q", q1, q2)
	}
}
