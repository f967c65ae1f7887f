package main

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/registry"
	"github.com/a2awebcap/a2awebcap/x402"
)

// start runs the system on free ports until the test ends.
func start(t *testing.T) *System {
	t.Helper()
	sys, err := Start(t.Context(), Options{ServerAddr: "127.0.0.1:0", LibraryAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sys.Close)
	return sys
}

// converse is Converse with a generous bound, failing the test on error.
func converse(t *testing.T, url, text string, task a2a.TaskID, payer *x402.Payer) ([]a2a.Event, *a2a.Task) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	events, final, err := Converse(ctx, url, text, task, payer, &out)
	t.Logf("%s <- %q:\n%s", url, text, out.String())
	if err != nil {
		t.Fatalf("Converse(%s, %q) = %v", url, text, err)
	}
	return events, final
}

func finalText(task *a2a.Task) string {
	if task.Status.Message == nil {
		return ""
	}
	return partsText(task.Status.Message.Parts)
}

// The researcher reads the library's page through its fetch capability and reports it, citing
// the page; asked to research nothing, it asks which topic, and the answer on the same task
// gets the research done.
func TestResearcher(t *testing.T) {
	t.Parallel()
	sys := start(t)
	page := sys.Library + "/wiki/alexandria"
	payer := sys.wallets.userPayer()

	_, task := converse(t, sys.AgentURL("researcher"), "research Alexandria", "", payer)
	if task.Status.State != a2a.TaskStateCompleted || !strings.Contains(finalText(task), "Eratosthenes") ||
		!strings.HasSuffix(finalText(task), "(source: "+page+")") {
		t.Errorf("research Alexandria: %s %q, want completed, the page's text and (source: %s)", task.Status.State, finalText(task), page)
	}

	_, task = converse(t, sys.AgentURL("researcher"), "research", "", payer)
	if task.Status.State != a2a.TaskStateInputRequired || finalText(task) != "Which topic should I research?" {
		t.Fatalf("research: %s %q, want input-required asking which topic", task.Status.State, finalText(task))
	}
	_, answered := converse(t, sys.AgentURL("researcher"), "carthage", task.ID, payer)
	if answered.ID != task.ID || answered.Status.State != a2a.TaskStateCompleted ||
		!strings.Contains(finalText(answered), "Punic Wars") || !strings.Contains(finalText(answered), sys.Library+"/wiki/carthage") {
		t.Errorf("answer on task %s: task %s %s %q, want the same task completed with Carthage's page cited", task.ID, answered.ID, answered.Status.State, finalText(answered))
	}

	_, task = converse(t, sys.AgentURL("researcher"), "research atlantis", "", payer)
	if task.Status.State != a2a.TaskStateCompleted || !strings.Contains(finalText(task), "no page on that topic") {
		t.Errorf("research atlantis: %s %q, want it to say the library has no page", task.Status.State, finalText(task))
	}

	// Each of the three tasks was paid for once, before the researcher worked on it; the
	// answer to its question was not charged again.
	paid := payer.Payments()
	if len(paid) != 3 {
		t.Fatalf("the user paid %d times, want 3: %+v", len(paid), paid)
	}
	for _, p := range paid {
		if p.Amount != Price || p.PayTo != sys.Researcher.String() || p.Receipt == nil || !p.Receipt.Success {
			t.Errorf("payment %+v, want %s to the researcher, settled", p, Price)
		}
	}
	if got := sys.Facilitator.Balance(Asset, sys.Researcher); got.Cmp(big.NewInt(3*10000)) != 0 {
		t.Errorf("the researcher's balance is %s, want 30000", got)
	}
	if got := sys.Facilitator.Balance(Asset, sys.User); got.Cmp(new(big.Int).Sub(funds, big.NewInt(30000))) != 0 {
		t.Errorf("the user's balance is %s, want %s less 30000", got, funds)
	}
}

// A task of the researcher that is not paid for is not worked on: it waits for payment.
func TestResearcherWantsPayment(t *testing.T) {
	t.Parallel()
	sys := start(t)
	_, task := converse(t, sys.AgentURL("researcher"), "research alexandria", "", nil)
	pr, asked, err := x402.RequiredOf(task)
	if task.Status.State != a2a.TaskStateInputRequired || !asked || err != nil || len(pr.Accepts) != 1 ||
		pr.Accepts[0].MaxAmountRequired != Price || pr.Accepts[0].PayTo != sys.Researcher.String() {
		t.Fatalf("unpaid research: %s, payment required %+v (%v, %v); want input-required for %s to the researcher", task.Status.State, pr, asked, err, Price)
	}
	if strings.Contains(finalText(task), "Eratosthenes") || sys.Facilitator.Settled() != 0 {
		t.Errorf("the researcher worked, or something was settled, before payment: %q", finalText(task))
	}
}

// The researcher's fetch reaches only the library: the capability its instance holds has a
// contract of the library's pages, nothing else.
func TestResearcherFetchesOnlyTheLibrary(t *testing.T) {
	t.Parallel()
	sys := start(t)
	set, release, err := sys.Agents.Get("researcher").Host.Capabilities(t.Context(), anonymous)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	var network []string
	for _, h := range set.Installed() {
		if h.Name == "fetch" {
			network = h.Contract.Network
		}
	}
	if want := sys.Library + "/wiki/*"; len(network) != 1 || network[0] != want {
		t.Errorf("the researcher's fetch may reach %q, want only %q", network, want)
	}
}

// The registry lists the researcher, found by its skill research.
func TestResearcherRegistered(t *testing.T) {
	t.Parallel()
	sys := start(t)
	out, err := registrySearch(t.Context(), sys, "research")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || !strings.HasPrefix(out[0], sys.AgentURL("researcher")) {
		t.Errorf("registry search by skill research: %q, want the researcher", out)
	}
}

var anonymous = agent.Principal{}

// registrySearch returns the URLs of the agents the system's registry lists with skill.
func registrySearch(ctx context.Context, sys *System, skill string) ([]string, error) {
	page, err := registry.NewClient(sys.URL, nil).Search(ctx, registry.Query{Skill: skill})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range page.Agents {
		out = append(out, e.URL)
	}
	return out, nil
}

// The writer finds the researcher in the registry by its skill, calls it through its a2a
// capability and writes up what it found: the researcher's events stream into the writer's
// task as they come, in order, each marked as the researcher's; the piece cites the
// researcher, its task and the page; and the writer remembers the finding as a belief whose
// provenance is the researcher's answer.
func TestWriter(t *testing.T) {
	t.Parallel()
	sys := start(t)
	researcher := strings.TrimSuffix(sys.AgentURL("researcher"), "/")
	page := sys.Library + "/wiki/alexandria"

	events, task := converse(t, sys.AgentURL("writer"), "write about alexandria", "", nil)
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("the writer's task ended %s: %q", task.Status.State, finalText(task))
	}

	// The researcher's events, relayed: one run of them, each marked with where it came from
	// and the researcher's task.
	var relayed []a2a.Event
	first, last := -1, -1
	var rtask string
	for i, ev := range events {
		src := Relayed(ev)
		if src == "" {
			continue
		}
		if src != "agent "+researcher {
			t.Errorf("event %d relayed from %q, want agent %s", i, src, researcher)
		}
		if first < 0 {
			first = i
		}
		last = i
		relayed = append(relayed, ev)
		meta := relayMeta(ev)
		if rtask == "" {
			rtask, _ = meta["task"].(string)
		}
		if meta["task"] != rtask || rtask == "" {
			t.Errorf("event %d relayed from task %v, want the researcher's task %q throughout", i, meta["task"], rtask)
		}
	}
	if len(relayed) == 0 || last-first+1 != len(relayed) {
		t.Fatalf("relayed events at %d..%d, %d of them: want one run of the researcher's events", first, last, len(relayed))
	}
	// In the order the researcher produced them: its artifacts in order, its answer last.
	rc, err := client.New(t.Context(), sys.AgentURL("researcher"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Destroy()
	rt, err := rc.GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(rtask)})
	if err != nil {
		t.Fatalf("the researcher's task %s: %v", rtask, err)
	}
	var wantArtifacts, gotArtifacts []string
	for _, a := range rt.Artifacts {
		wantArtifacts = append(wantArtifacts, rtask+":"+string(a.ID))
	}
	var lastRelayedText string
	for _, ev := range relayed {
		switch e := ev.(type) {
		case *a2a.TaskArtifactUpdateEvent:
			gotArtifacts = append(gotArtifacts, string(e.Artifact.ID))
		case *a2a.TaskStatusUpdateEvent:
			if e.Status.Message != nil {
				lastRelayedText = partsText(e.Status.Message.Parts)
			}
		}
	}
	if diff := cmp.Diff(wantArtifacts, gotArtifacts); diff != "" {
		t.Errorf("relayed artifacts, in order (-the researcher's task +relayed):\n%s", diff)
	}
	if lastRelayedText != finalText(rt) || !strings.Contains(lastRelayedText, "Eratosthenes") {
		t.Errorf("the last relayed message %q, want the researcher's answer %q", lastRelayedText, finalText(rt))
	}
	// The writer's own events come before and after, never among them.
	if Relayed(events[0]) != "" || Relayed(events[len(events)-1]) != "" {
		t.Errorf("the writer's task starts or ends with a relayed event")
	}

	// The piece cites the researcher, its task and the page it cited, and says what was paid.
	text := finalText(task)
	receipts := x402.ReceiptsOf(rt)
	var tx string
	if len(receipts) > 0 {
		tx = receipts[0].Transaction
	}
	for _, want := range []string{"Eratosthenes", "researcher (" + researcher + ")", "its task " + rtask, "citing " + page,
		"Research paid: " + Price + " atomic units of " + Asset.Address + " on " + Asset.Network + ", transaction " + tx + "."} {
		if !strings.Contains(text, want) {
			t.Errorf("the writer's piece %q lacks %q", text, want)
		}
	}

	// The writer paid for it, within its budget, and the researcher has the receipt.
	if len(receipts) != 1 || !receipts[0].Success || receipts[0].Transaction == "" {
		t.Errorf("the researcher's task's receipts %+v, want one settled payment", receipts)
	}
	if got := sys.Facilitator.Balance(Asset, sys.Researcher); got.Cmp(big.NewInt(10000)) != 0 {
		t.Errorf("the researcher's balance is %s, want %s", got, Price)
	}
	if got := sys.Facilitator.Balance(Asset, sys.Writer); got.Cmp(new(big.Int).Sub(funds, big.NewInt(10000))) != 0 {
		t.Errorf("the writer's balance is %s, want %s less %s", got, funds, Price)
	}

	// The finding is a belief whose provenance is the researcher's answer.
	beliefs, err := Remembered(t.Context(), sys, "writer")
	if err != nil {
		t.Fatal(err)
	}
	if len(beliefs) != 1 {
		t.Fatalf("the writer believes %+v, want one belief", beliefs)
	}
	b := beliefs[0]
	if b.Subject != "alexandria" || !strings.Contains(b.Value, "Eratosthenes") || !strings.Contains(b.Value, page) {
		t.Errorf("belief %s = %q, want alexandria: the researcher's finding with its source", b.Subject, b.Value)
	}
	p := b.Provenance
	if p.Source != (agent.Source{Kind: agent.SourceAgent, Name: researcher}) || p.Rule != "remember-finding" ||
		p.Context.Task != string(task.ID) || len(p.Observations) != 1 || !strings.Contains(p.Reason, rtask) {
		t.Errorf("provenance %+v, want from agent %s, rule remember-finding, in the writer's task %s, one observation, citing task %s",
			p, researcher, task.ID, rtask)
	}
	in, err := sys.Agents.Get("writer").Host.Instance(t.Context(), anonymous)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := in.Recall(t.Context(), agent.Query{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var obs *agent.Observation
	for i := range rec.Observations {
		if len(p.Observations) > 0 && rec.Observations[i].ID == p.Observations[0] {
			obs = &rec.Observations[i]
		}
	}
	if obs == nil || obs.Kind != "tool-result" || obs.Source.Kind != agent.SourceAgent || obs.Data["task"] != rtask ||
		obs.Data["tool"] != "a2a.call" || !strings.Contains(obs.Text, "Eratosthenes") ||
		(len(receipts) > 0 && !strings.Contains(obs.Text, receipts[0].Transaction)) {
		t.Errorf("the belief's observation %+v, want the researcher's answer: a tool-result of a2a.call from the agent, its task %s, with what was paid", obs, rtask)
	}
}

// Asked to write about nothing, the writer has the researcher ask which topic: the question
// reaches the writer's user as the researcher's, and the answer, on the writer's task, gets
// the piece written.
func TestWriterRelaysTheResearchersQuestion(t *testing.T) {
	t.Parallel()
	sys := start(t)
	_, task := converse(t, sys.AgentURL("writer"), "write", "", nil)
	if task.Status.State != a2a.TaskStateInputRequired || finalText(task) != "researcher asks: Which topic should I research?" {
		t.Fatalf("write: %s %q, want input-required with the researcher's question", task.Status.State, finalText(task))
	}
	_, done := converse(t, sys.AgentURL("writer"), "pergamon", task.ID, nil)
	if done.ID != task.ID || done.Status.State != a2a.TaskStateCompleted || !strings.Contains(finalText(done), "parchment") ||
		!strings.Contains(finalText(done), "citing "+sys.Library+"/wiki/pergamon") {
		t.Errorf("the answer on task %s: task %s %s %q, want it completed, citing Pergamon's page", task.ID, done.ID, done.Status.State, finalText(done))
	}
}

// relayMeta is the provenance a relayed event carries.
func relayMeta(ev a2a.Event) map[string]any {
	var meta map[string]any
	switch e := ev.(type) {
	case *a2a.TaskStatusUpdateEvent:
		meta = e.Metadata
	case *a2a.TaskArtifactUpdateEvent:
		meta = e.Artifact.Metadata
	}
	m, _ := meta[agent.MetaKey].(map[string]any)
	return m
}

// The program, as `go run ./examples/research` runs it: the default message to the writer,
// the conversation and what the writer remembers.
func TestRun(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, Options{ServerAddr: "127.0.0.1:0", LibraryAddr: "127.0.0.1:0"}, "writer", defaultMessage, strings.NewReader(""), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Log(out.String())
	for _, want := range []string{"> writer: write about alexandria", "  from agent http://127.0.0.1:", "/agents/researcher: working: The Library of Alexandria",
		"ended completed.", "citing http://127.0.0.1:", "The researcher's account holds 10000 of USDC", "1 payments settled",
		"writer remembers:", "  alexandria: The Library of Alexandria", "from agent http://"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q", want)
		}
	}
}

// The writer pays within the budget writer.json grants it (0.05 USDC: five researches); past
// it, the call fails before anything is signed, and the writer says why.
func TestWriterBudget(t *testing.T) {
	t.Parallel()
	sys := start(t)
	topics := []string{"alexandria", "carthage", "pergamon", "alexandria", "carthage"}
	for _, topic := range topics {
		if _, task := converse(t, sys.AgentURL("writer"), "write about "+topic, "", nil); !strings.Contains(finalText(task), "Research paid: "+Price) {
			t.Fatalf("write about %s: %q, want it written and paid", topic, finalText(task))
		}
	}
	_, task := converse(t, sys.AgentURL("writer"), "write about pergamon", "", nil)
	if !strings.HasPrefix(finalText(task), "I could not get the research done: ") || !strings.Contains(finalText(task), "budget") {
		t.Errorf("a sixth piece: %q, want the call refused for the budget", finalText(task))
	}
	spent := big.NewInt(int64(len(topics)) * 10000)
	if got := sys.Facilitator.Balance(Asset, sys.Writer); got.Cmp(new(big.Int).Sub(funds, spent)) != 0 {
		t.Errorf("the writer's balance is %s, want %s less %s", got, funds, spent)
	}
	if got := sys.Facilitator.Settled(); got != uint64(len(topics)) {
		t.Errorf("%d payments settled, want %d", got, len(topics))
	}
}
