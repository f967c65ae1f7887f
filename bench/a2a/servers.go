package main

// Starting, watching and stopping the server processes.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/a2awebcap/a2awebcap/binding"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

// benchEnv describes the machine.
type benchEnv struct {
	GoVersion string `json:"go_version"`
	A2AGo     string `json:"a2a_go_version"`
	CPUs      int    `json:"cpus"`
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	CPUModel  string `json:"cpu_model,omitempty"`
	TempFS    string `json:"temp_fs,omitempty"` // filesystem of the SQLite file
}

func probeEnv() *benchEnv {
	e := &benchEnv{GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/a2aproject/a2a-go/v2" {
				e.A2AGo = d.Version
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				e.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	e.TempFS = fsType(os.TempDir())
	return e
}

// fsType returns the type of the filesystem mounted at the longest prefix of dir (from
// /proc/mounts), or "".
func fsType(dir string) string {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return ""
	}
	dir, _ = filepath.Abs(dir)
	best, typ := -1, ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		mp := f[1]
		if (dir == mp || strings.HasPrefix(dir, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > best {
			best, typ = len(mp), f[2]
		}
	}
	return typ
}

// server is one server process.
type server struct {
	*harness.Process
	url   string // the JSON-RPC endpoint
	wsURL string // the capnweb binding's WebSocket endpoint (ours-* only)
	desc  string // what runs, for the report
}

type serverSet struct {
	mu   sync.Mutex
	byID map[string]*server
	tmp  string
	db   string
}

func (ss *serverSet) get(name string) *server {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.byID[name]
}

func (ss *serverSet) stopAll() {
	ss.mu.Lock()
	list := make([]*harness.Process, 0, len(ss.byID))
	for _, s := range ss.byID {
		list = append(list, s.Process)
	}
	ss.mu.Unlock()
	harness.StopAll(list)
	if ss.tmp != "" {
		os.RemoveAll(ss.tmp)
		ss.tmp = ""
	}
}

// dbSize is the size of the SQLite database and its WAL, or 0.
func (ss *serverSet) dbSize() int64 {
	if ss.db == "" {
		return 0
	}
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(ss.db + suffix); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func startServers(ctx context.Context, cfg *config) (*serverSet, error) {
	ss := &serverSet{byID: map[string]*server{}}
	self, err := os.Executable()
	if err != nil {
		return ss, err
	}
	tmp, err := os.MkdirTemp("", "a2a-bench-")
	if err != nil {
		return ss, err
	}
	ss.tmp = tmp // removed by stopAll

	for _, name := range serverNames {
		if !cfg.runs(name) {
			continue
		}
		argv := []string{self, "-role", name}
		var desc string
		switch name {
		case "ours-sqlite":
			ss.db = filepath.Join(tmp, "a2a.db")
			argv = append(argv, "-db", ss.db)
			desc = "engine.New + store/sqlite (file in " + tmp + ", WAL, synchronous=NORMAL) + binding.NewHTTPHandler"
		case "ours-memory":
			desc = "engine.New + store/memory + binding.NewHTTPHandler (JSON-RPC, and capnweb at " + binding.DefaultCapnwebPath + ")"
		case "a2ago":
			desc = "a2a-go a2asrv.NewHandler (taskstore.NewInMemory, fixed user) + a2asrv.NewJSONRPCHandler"
		}
		if cfg.profileDir != "" && strings.HasPrefix(name, "ours-") {
			argv = append(argv, "-profile", filepath.Join(cfg.profileDir, name+".pprof"))
			desc += ", CPU profile on"
		}
		s, err := startServer(ctx, name, argv)
		if err != nil {
			return ss, err
		}
		s.desc = desc
		ss.mu.Lock()
		ss.byID[name] = s
		ss.mu.Unlock()
	}
	return ss, nil
}

// startOptions: the servers take -port, get our environment without GOMAXPROCS and GOGC (they
// use the runtime defaults), and get 10 s to stop (a CPU profile is written on the way out).
var startOptions = harness.StartOptions{
	PortFlag:  "-port",
	Timeout:   30 * time.Second,
	StopGrace: 10 * time.Second,
	DropEnv:   []string{"GOMAXPROCS", "GOGC"},
}

// startServer runs argv + "-port 0" and waits for its "LISTENING <port>" line. The server's
// stdin is a pipe: closing it (or our death) makes every server here exit.
func startServer(ctx context.Context, name string, argv []string) (*server, error) {
	p, err := harness.Start(ctx, name, argv, startOptions)
	if err != nil {
		return nil, err
	}
	return &server{Process: p,
		url:   fmt.Sprintf("http://127.0.0.1:%d%s", p.Port, jsonrpcPath),
		wsURL: fmt.Sprintf("ws://127.0.0.1:%d%s", p.Port, binding.DefaultCapnwebPath),
	}, nil
}
