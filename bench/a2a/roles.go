package main

// The server roles this binary plays when re-executed with -role: our engine on SQLite or on the
// memory store (behind binding.NewHTTPHandler), and a2a-go's own request handler (behind
// a2asrv.NewJSONRPCHandler). All three run echoExecutor and serve JSON-RPC at jsonrpcPath.

import (
	"context"
	"log"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store"
	"github.com/a2awebcap/a2awebcap/store/memory"
	"github.com/a2awebcap/a2awebcap/store/sqlite"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

// jsonrpcPath is where every server answers JSON-RPC (binding.DefaultJSONRPCPath).
const jsonrpcPath = binding.DefaultJSONRPCPath

// benchUser is the user a2a-go's in-memory task store files every task under: its default
// authenticator takes the user from the call context, and without one ListTasks is refused.
const benchUser = "bench"

// roleLogger is the logger of every server role: warnings and errors only, on stderr (which the
// harness prefixes with the server's name).
func roleLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func benchCard() *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:               "bench echo",
		Description:        "echoExecutor: reply | task | stream N",
		Version:            "1.0.0",
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echoes", Tags: []string{"bench"}}},
	}
}

// serveOurs runs our engine on a store: SQLite at dbPath (the durable default) when
// storeKind is "sqlite", else store/memory. cpuprofile, when set, receives a CPU profile of the
// whole life of the process, written when it is told to stop.
func serveOurs(storeKind, dbPath, cpuprofile string) {
	ctx := context.Background()
	slog.SetDefault(roleLogger())
	stopProfile := harness.StartCPUProfile(cpuprofile)
	defer stopProfile()

	var st store.Store
	switch storeKind {
	case "sqlite":
		if dbPath == "" {
			log.Fatal("-role ours-sqlite needs -db")
		}
		s, err := sqlite.Open(ctx, dbPath, nil)
		if err != nil {
			log.Fatal(err)
		}
		st = s
	case "memory":
		st = memory.New()
	default:
		log.Fatalf("unknown store %q", storeKind)
	}
	eng := engine.New(echoExecutor{}, st, &engine.Options{Logger: slog.Default(), NoPushNotifications: true})
	if _, err := eng.Recover(ctx); err != nil {
		log.Fatal(err)
	}
	serveUntilStopped(binding.NewHTTPHandler(eng, benchCard(), nil))
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	eng.Close(cctx)
	st.Close()
}

// serveA2AGo runs a2a-go's default request handler (in-memory task store, with an
// authenticator returning a fixed user) behind its JSON-RPC transport.
func serveA2AGo(cpuprofile string) {
	slog.SetDefault(roleLogger())
	stopProfile := harness.StartCPUProfile(cpuprofile)
	defer stopProfile()
	ts := taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{
		Authenticator: func(context.Context) (string, error) { return benchUser, nil },
	})
	h := a2asrv.NewHandler(echoExecutor{}, a2asrv.WithTaskStore(ts), a2asrv.WithLogger(slog.Default()))
	mux := http.NewServeMux()
	mux.Handle(jsonrpcPath, a2asrv.NewJSONRPCHandler(h))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(benchCard()))
	serveUntilStopped(mux)
}

// serveUntilStopped serves h on 127.0.0.1:-port until the harness stops us (see
// harness.ServeUntilStopped); closing the server closes every connection, streams included.
func serveUntilStopped(h http.Handler) {
	harness.ServeUntilStopped(&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, *rolePort)
}
