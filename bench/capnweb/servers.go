package main

// Starting, watching and stopping the server processes.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

// benchEnv describes the machine and the paths the harness needs.
type benchEnv struct {
	Root      string `json:"-"` // module root
	GoVersion string `json:"go_version"`
	Node      string `json:"-"` // node binary, "" when absent
	NodeVer   string `json:"node_version,omitempty"`
	CPUs      int    `json:"cpus"`
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	CPUModel  string `json:"cpu_model,omitempty"`
}

func probeEnv() (*benchEnv, error) {
	e := &benchEnv{GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMOD: %w (run from inside the module)", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return nil, errors.New("not inside the module: run `go run ./bench/capnweb` from the repository")
	}
	e.Root = filepath.Dir(gomod)
	if _, err := os.Stat(filepath.Join(e.Root, "interop", "server.mjs")); err != nil {
		return nil, fmt.Errorf("module root %s has no interop/server.mjs", e.Root)
	}
	if p, err := exec.LookPath("node"); err == nil {
		e.Node = p
		if v, err := exec.Command(p, "--version").Output(); err == nil {
			e.NodeVer = strings.TrimSpace(string(v))
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
	return e, nil
}

// server is one server process.
type server struct {
	*harness.Process
	wsURL   string
	httpURL string
	desc    string // what runs, for the report
	// freshArgv starts another process of the same server (without a CPU profile).
	freshArgv []string
}

type serverSet struct {
	mu   sync.Mutex
	byID map[string]*server
	tmp  string
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
	}
}

func startServers(ctx context.Context, cfg *config, env *benchEnv) (*serverSet, error) {
	ss := &serverSet{byID: map[string]*server{}}
	self, err := os.Executable()
	if err != nil {
		return ss, err
	}
	tmp, err := os.MkdirTemp("", "capnweb-bench-")
	if err != nil {
		return ss, err
	}
	ss.tmp = tmp // removed by stopAll; the idle workload starts fresh servers from it

	type spec struct {
		name  string
		argv  []string
		desc  string
		fresh []string
	}
	var specs []spec
	for _, name := range cfg.servers {
		switch name {
		case "go":
			var spin []string // the Go server's flags for -readspin
			desc := ""
			if cfg.readSpin != 0 {
				spin = []string{"-readspin", cfg.readSpin.String()}
				desc = ", ReadSpin " + cfg.readSpin.String()
			}
			if cfg.profile != "" {
				prof, err := filepath.Abs(cfg.profile)
				if err != nil {
					return ss, err
				}
				specs = append(specs, spec{name, append([]string{self, "-role", "goserver", "-cpuprofile", prof}, spin...),
					"harness re-exec -role goserver (capnweb.NewHandler + capnwebtest.API), CPU profile on" + desc,
					append([]string{self, "-role", "goserver"}, spin...)})
				continue
			}
			bin := filepath.Join(tmp, "goserver")
			fmt.Fprintln(os.Stderr, "building interop/goserver ...")
			b := exec.CommandContext(ctx, "go", "build", "-o", bin, "./interop/goserver")
			b.Dir = env.Root
			b.Stdout, b.Stderr = os.Stderr, os.Stderr
			if err := b.Run(); err != nil {
				return ss, fmt.Errorf("go build ./interop/goserver: %w", err)
			}
			specs = append(specs, spec{name, append([]string{bin}, spin...), "interop/goserver (go build)" + desc, nil})
		case "node":
			if env.Node == "" {
				return ss, errors.New("node not found in PATH (use -servers go,echo to skip the Node server)")
			}
			if _, err := os.Stat(filepath.Join(env.Root, "interop", "node_modules", "capnweb")); err != nil {
				return ss, errors.New("interop/node_modules/capnweb missing: run `cd interop && npm ci` (or `make npm`)")
			}
			specs = append(specs, spec{name, []string{env.Node, filepath.Join(env.Root, "interop", "server.mjs")},
				"node interop/server.mjs (capnweb@npm)", nil})
		case "echo":
			specs = append(specs, spec{name, []string{self, "-role", "echo"}, "harness re-exec -role echo (coder/websocket)", nil})
		}
	}
	for _, sp := range specs {
		s, err := startServer(ctx, sp.name, sp.argv)
		if err != nil {
			return ss, err
		}
		s.desc = sp.desc
		s.freshArgv = sp.fresh
		if s.freshArgv == nil {
			s.freshArgv = sp.argv
		}
		ss.mu.Lock()
		ss.byID[sp.name] = s
		ss.mu.Unlock()
	}
	return ss, nil
}

// startOptions: the servers (Go and Node alike) take --port, get our environment without
// GOMAXPROCS (the Go servers use the runtime default), and get 5 s to stop.
var startOptions = harness.StartOptions{
	PortFlag:  "--port",
	Timeout:   60 * time.Second,
	StopGrace: 5 * time.Second,
	DropEnv:   []string{"GOMAXPROCS"},
}

// startServer runs argv + "--port 0" and waits for its "LISTENING <port>" line. The server's
// stdin is a pipe: closing it (or our death) makes every server here exit.
func startServer(ctx context.Context, name string, argv []string) (*server, error) {
	p, err := harness.Start(ctx, name, argv, startOptions)
	if err != nil {
		return nil, err
	}
	return &server{
		Process: p,
		wsURL:   fmt.Sprintf("ws://127.0.0.1:%d/", p.Port),
		httpURL: fmt.Sprintf("http://127.0.0.1:%d/", p.Port),
	}, nil
}
