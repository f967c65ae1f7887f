package agent_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/jackc/pgx/v5"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/llm"
	"github.com/a2awebcap/a2awebcap/agent/pgstore"
	"github.com/a2awebcap/a2awebcap/agent/sqlitestore"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/postgres"
	"github.com/a2awebcap/a2awebcap/store/sqlite"
)

// killPolicy writes memory before it consults: a question is remembered and adopted as a goal,
// then the model is asked. A turn killed during the consult has written all that in its view.
func killPolicy() *agent.Policy {
	return &agent.Policy{Rules: []agent.Rule{
		{Name: "remember", When: `command == "remember" && args.indexOf(" is ") > 0`, Action: agent.Remember,
			Params: map[string]string{"subject": `args.substring(0, args.indexOf(" is "))`, "value": `args.substring(args.indexOf(" is ") + 4)`}, Reason: "told"},
		{Name: "note-question", When: `text.endsWith("?")`, Action: agent.Remember,
			Params: map[string]string{"subject": `"last question"`, "value": `text`}, Reason: "questions matter"},
		{Name: "adopt", When: `text.endsWith("?")`, Action: agent.Adopt, Params: map[string]string{"goal": `"answer " + text`}, Reason: "asked"},
		{Name: "consult", When: `text.endsWith("?")`, Action: agent.Consult, Reason: "the model knows"},
		{Name: "ack", When: `last.status == "stored" && !text.endsWith("?")`, Action: agent.Reply, Params: map[string]string{"text": `"Noted."`}},
	}}
}

// stores opens the agent and task stores named by spec: "sqlite:PATH" or "postgres:SCHEMA:DSN".
func stores(ctx context.Context, spec string) (agent.Store, store.Store, func(), error) {
	kind, rest, _ := strings.Cut(spec, ":")
	if kind == "sqlite" {
		as, err := sqlitestore.Open(ctx, rest)
		if err != nil {
			return nil, nil, nil, err
		}
		ts, err := sqlite.Open(ctx, rest, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		return as, ts, func() { _ = as.Close(); _ = ts.Close() }, nil
	}
	schema, dsn, _ := strings.Cut(rest, ":")
	as, err := pgstore.Open(ctx, dsn, &pgstore.Options{Schema: schema})
	if err != nil {
		return nil, nil, nil, err
	}
	ts, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema})
	if err != nil {
		return nil, nil, nil, err
	}
	return as, ts, func() { _ = as.Close(); _ = ts.Close() }, nil
}

// TestKillChild is the process TestKillMidTurn kills: it commits one turn, starts a second that
// consults the model, prints the second task's ID and waits to be killed.
func TestKillChild(t *testing.T) {
	spec, model := os.Getenv("A2AWEBCAP_KILL_STORES"), os.Getenv("A2AWEBCAP_KILL_MODEL")
	if spec == "" {
		t.Skip("run by TestKillMidTurn")
	}
	ctx := context.Background()
	as, ts, _, err := stores(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	h, err := agent.NewHost(&agent.Definition{Name: "killed", Policy: killPolicy(), Model: llm.New(model, "m", nil)}, &agent.HostOptions{Store: as})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(agent.Executor(h), ts, nil)
	if _, err := e.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("remember the sky is blue"))}); err != nil {
		t.Fatal(err)
	}
	res, err := e.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("why is the sky blue?")),
		Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("TASK %s\n", res.(*a2a.Task).ID)
	select {} // until killed
}

// A process killed (SIGKILL) in the middle of a turn leaves no half turn: after a restart the
// store has the committed turn whole and nothing of the killed one, on SQLite and PostgreSQL,
// and the killed turn's task is failed by recovery.
func TestKillMidTurn(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	durableStores(t, "agent_kill", killMidTurn)
}

// durableStores runs f as parallel subtests "sqlite" and "postgres", each with its stores' spec
// for stores: a new SQLite file, and a new schema (named prefix and the process ID, dropped
// after) on the test PostgreSQL server (pgDSN: skipped without one, unless CI is set).
func durableStores(t *testing.T, prefix string, f func(t *testing.T, spec string)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		f(t, "sqlite:"+t.TempDir()+"/a2awebcap.db")
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dsn := pgDSN(t)
		schema := fmt.Sprintf("%s_%d", prefix, os.Getpid())
		t.Cleanup(func() {
			if conn, err := pgx.Connect(context.Background(), dsn); err == nil {
				_, _ = conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)
				conn.Close(context.Background())
			}
		})
		f(t, "postgres:"+schema+":"+dsn)
	})
}

func pgDSN(t *testing.T) string {
	for _, d := range []string{os.Getenv("A2A_POSTGRES_DSN"), "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "postgres://root@127.0.0.1:5432/test?sslmode=disable"} {
		if d == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, d)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return d
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no PostgreSQL server")
	}
	t.Skip("no PostgreSQL server to test against (set A2A_POSTGRES_DSN)")
	return ""
}

func killMidTurn(t *testing.T, spec string) {
	entered := make(chan struct{}, 1)
	hold := make(chan struct{})
	defer close(hold)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		entered <- struct{}{}
		select { // the child is killed meanwhile
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	defer model.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.v")
	cmd.Env = append(os.Environ(), "A2AWEBCAP_KILL_STORES="+spec, "A2AWEBCAP_KILL_MODEL="+model.URL+"/v1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "TASK "); ok {
				lines <- id
			}
		}
		close(lines)
	}()
	var task string
	select {
	case task = <-lines:
	case <-time.After(2 * time.Minute): // a failure guard only
		_ = cmd.Process.Kill()
		t.Fatal("the child never started its second turn")
	}
	select {
	case <-entered: // the turn is in its consult, its writes in its view
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the child never consulted the model")
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()

	ctx := t.Context()
	as, ts, closeAll, err := stores(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	snap, err := as.Load(ctx, agent.Key{Agent: "killed"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, o := range snap.Observations {
		texts = append(texts, o.Text)
	}
	if len(texts) != 1 || texts[0] != "remember the sky is blue" {
		t.Errorf("observations after the kill: %q, want only the committed turn's", texts)
	}
	if len(snap.Beliefs) != 1 || snap.Beliefs[0].Subject != "the sky" || len(snap.Goals) != 0 {
		t.Errorf("after the kill: beliefs %+v, goals %+v; want the sky only", snap.Beliefs, snap.Goals)
	}
	if rec, _, err := as.TurnByTask(ctx, "killed", task); rec != nil || err != nil {
		t.Errorf("the killed turn's record: %+v, %v", rec, err)
	}
	h, err := agent.NewHost(&agent.Definition{Name: "killed", Policy: killPolicy()}, &agent.HostOptions{Store: as})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	e := engine.New(agent.Executor(h), ts, nil)
	defer e.Close(context.Background())
	if _, err := e.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := e.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(task)})
	if err != nil || got.Status.State != a2a.TaskStateFailed {
		t.Errorf("the killed turn's task after recovery: %v, %v; want failed", got.Status.State, err)
	}
	a, _ := h.Instance(ctx, agent.Principal{})
	if run, err := a.Ask(ctx, agent.UserText("remember the sea is green")); err != nil || run.Reply != "Noted." {
		t.Errorf("after recovery: %+v, %v", run, err)
	}
}
