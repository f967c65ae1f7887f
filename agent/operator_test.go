package agent_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent"
)

// The operator's meta level: only operators; every principal's instance, by principal; a review
// approved in the operator's name, a rejection of a decided review refused, rollbacks.
func TestOperator(t *testing.T) {
	t.Parallel()
	pol := agent.Notes()
	pol.Limits.Approval = []agent.Action{agent.Reply}
	h := newHost(t, &agent.Definition{Name: "notes", Policy: pol}, nil)
	alice := instance(t, h, "alice")
	hello := ask(t, alice, "s", "hello").Observation
	greet := agent.Rule{Name: "greet", When: `command == "hello"`, Action: agent.Reply, Params: map[string]string{"text": `"Hello!"`}, Reason: "users greet"}
	d, err := alice.Propose(t.Context(), agent.Proposal{Op: agent.OpAdd, Rule: greet, Justification: "users greet", Evidence: []string{hello}})
	if err != nil || d.Pending == "" {
		t.Fatalf("Propose() = %+v, %v", d, err)
	}
	op := h.Operator([]string{"opr"})
	asOpr, asAlice := callAs(t, "opr"), callAs(t, "alice")

	if _, err := op.ListInstances(asAlice, ""); !errors.Is(err, a2a.ErrUnauthorized) {
		t.Errorf("alice lists instances: %v", err)
	}
	if _, err := op.ApproveProposal(asAlice, "acme", "alice", d.Pending); !errors.Is(err, a2a.ErrUnauthorized) {
		t.Errorf("alice approves her own proposal: %v", err)
	}
	if _, err := op.ListInstances(t.Context(), ""); !errors.Is(err, a2a.ErrUnauthorized) {
		t.Errorf("an anonymous caller lists instances: %v", err)
	}
	list, err := op.ListInstances(asOpr, "acme")
	if err != nil || !strings.Contains(jsonOf(t, list), `{"name":"alice","tenant":"acme"}`) {
		t.Errorf("ListInstances = %s, %v", jsonOf(t, list), err)
	}
	pv, err := op.GetPolicy(asOpr, "acme", "alice")
	if err != nil || !strings.Contains(jsonOf(t, pv), `"current":1`) || !strings.Contains(jsonOf(t, pv), `"status":"pending"`) {
		t.Errorf("GetPolicy = %s, %v", jsonOf(t, pv), err)
	}
	if _, err := op.GetPolicy(asOpr, "acme", "nobody"); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("GetPolicy of a principal without an instance: %v", err)
	}
	res, err := op.ApproveProposal(asOpr, "acme", "alice", d.Pending)
	if err != nil || jsonOf(t, res) != `{"version":2}` {
		t.Fatalf("ApproveProposal = %s, %v", jsonOf(t, res), err)
	}
	if run := ask(t, alice, "s", "hello"); !strings.Contains(run.Reply, "Hello!") {
		t.Errorf("after approval: %q", run.Reply)
	}
	v, _ := alice.View(t.Context())
	if last := v.History[len(v.History)-1]; last.Approver != "opr" {
		t.Errorf("the approval's approver = %q, want the operator", last.Approver)
	}
	if _, err := op.RejectProposal(asOpr, "acme", "alice", d.Pending, "too late"); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("rejecting a decided review: %v", err)
	}
	if _, err := op.ApproveProposal(asOpr, "acme", "alice", "r99"); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("approving no review: %v", err)
	}
	if res, err := op.RollbackPolicy(asOpr, "acme", "alice"); err != nil || jsonOf(t, res) != `{"version":1}` {
		t.Errorf("RollbackPolicy = %s, %v", jsonOf(t, res), err)
	}
	if _, err := op.RollbackPolicy(asOpr, "acme", "alice"); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("a rollback past version 1: %v", err)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
