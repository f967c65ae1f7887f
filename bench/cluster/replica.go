package main

// The replica role: this binary re-executed with -role replica is one replica of a cluster,
// built as `a2awebcap serve -cluster` builds it — engine.New with an engine.Cluster on the
// PostgreSQL store and the NATS JetStream fan-out (package cluster), behind
// binding.NewHTTPHandler — but running benchExecutor, whose streams are as fast as the engine
// takes them (the built-in agent's "wait" ticks once a second).

import (
	"context"
	"fmt"
	"iter"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/cluster"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store/postgres"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

// serveReplica runs one replica named name on the database dsn and the stream of the NATS
// server at natsURL, on 127.0.0.1:port, until the harness stops it.
func serveReplica(name, dsn, natsURL, stream string, port int) {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	slog.SetDefault(logger)
	st, err := postgres.Open(ctx, dsn, nil)
	if err != nil {
		log.Fatal(err)
	}
	fan, err := cluster.Connect(ctx, natsURL, &cluster.Options{Stream: stream, Name: "bench " + name, Logger: logger})
	if err != nil {
		log.Fatal(err)
	}
	eng := engine.New(benchExecutor{}, st, &engine.Options{Logger: logger, NoPushNotifications: true,
		Cluster: &engine.Cluster{Replica: name, Fanout: fan}})
	if _, err := eng.Recover(ctx); err != nil {
		log.Fatal(err)
	}
	harness.ServeUntilStopped(&http.Server{Handler: binding.NewHTTPHandler(eng, benchCard(), nil), ReadHeaderTimeout: 10 * time.Second}, port)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	eng.Close(cctx)
	fan.Close()
	st.Close()
}

func benchCard() *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:               "cluster bench",
		Description:        "benchExecutor: task | stream N | tick N MS",
		Version:            "1.0.0",
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{{ID: "bench", Name: "bench", Description: "benchmark tasks", Tags: []string{"bench"}}},
	}
}

// benchExecutor answers by the first word of the message's text:
//
//   - "task ...": working, one artifact echoing the text, completed (a SendMessage's task);
//   - "stream N": working, N artifact updates appending a small chunk, completed, as fast as
//     the engine takes them;
//   - "tick N MS": working, then N status updates MS milliseconds apart, each stamped with the
//     time it was made (Status.Timestamp), then completed: the events whose delivery the
//     cross-replica workload times.
type benchExecutor struct{}

var _ a2asrv.AgentExecutor = benchExecutor{}

func (benchExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		var text string
		if ec.Message != nil && len(ec.Message.Parts) > 0 {
			text = ec.Message.Parts[0].Text()
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			f = []string{""}
		}
		bad := func() {
			yield(nil, fmt.Errorf("%w: %q: want task TEXT, stream N or tick N MS", a2a.ErrInvalidParams, text))
		}
		switch f[0] {
		case "task":
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
			if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart(text)), nil) {
				return
			}
		case "stream":
			n, err := count(f, 1, 100000)
			if err != nil {
				bad()
				return
			}
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
			first := a2a.NewArtifactEvent(ec, a2a.NewTextPart("tok "))
			if !yield(first, nil) {
				return
			}
			for range n - 1 {
				ev := a2a.NewArtifactUpdateEvent(ec, first.Artifact.ID, a2a.NewTextPart("tok "))
				ev.Append = true
				if !yield(ev, nil) {
					return
				}
			}
		case "tick":
			n, err := count(f, 1, 10000)
			ms, err2 := count(f, 2, 60000)
			if err != nil || err2 != nil {
				bad()
				return
			}
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
			t := time.NewTicker(time.Duration(ms) * time.Millisecond)
			defer t.Stop()
			for i := range n {
				select {
				case <-t.C:
				case <-ctx.Done():
					return
				}
				m := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(strconv.Itoa(i+1)))
				if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, m), nil) {
					return
				}
			}
		default:
			bad()
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (benchExecutor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// count parses field i of f as a number from 1 to most.
func count(f []string, i, most int) (int, error) {
	if i >= len(f) {
		return 0, fmt.Errorf("missing")
	}
	n, err := strconv.Atoi(f[i])
	if err != nil || n < 1 || n > most {
		return 0, fmt.Errorf("bad count %q", f[i])
	}
	return n, nil
}
