package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The default store lives in the data directory: -data-dir, else $XDG_DATA_HOME/a2awebcap,
// else ~/.local/share/a2awebcap; an explicit -db wins. (Not parallel: it sets the environment.)
func TestServeDataDir(t *testing.T) {
	home, xdg, flagDir := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("A2AWEBCAP_DB", "")
	t.Setenv("A2AWEBCAP_DATA_DIR", "")
	for _, tc := range []struct {
		name, xdg string
		args      []string
		want      string
	}{
		{"home", "", nil, filepath.Join(home, ".local", "share", "a2awebcap", "a2awebcap.db")},
		{"xdg", xdg, nil, filepath.Join(xdg, "a2awebcap", "a2awebcap.db")},
		{"relative xdg is ignored", "rel", nil, filepath.Join(home, ".local", "share", "a2awebcap", "a2awebcap.db")},
		{"flag", xdg, []string{"-data-dir", flagDir}, filepath.Join(flagDir, "a2awebcap.db")},
		{"db wins", xdg, []string{"-data-dir", flagDir, "-db", "x.db"}, "x.db"},
		{"memory", xdg, []string{"-db", "memory"}, "memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_DATA_HOME", tc.xdg)
			c, err := parseServe(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if c.db != tc.want {
				t.Errorf("parseServe(%q).db = %q, want %q", tc.args, c.db, tc.want)
			}
		})
	}

	// serve creates the directory, private, and keeps its store there.
	t.Setenv("XDG_DATA_HOME", xdg)
	addr := freeAddr(t)
	c, err := parseServe([]string{"-addr", addr, "-agent", "builtin", "-no-push"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, c, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	waitUp(t, addr)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(xdg, "a2awebcap"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data directory: %v, %v; want a directory with mode 0700", fi, err)
	}
	if _, err := os.Stat(filepath.Join(xdg, "a2awebcap", "a2awebcap.db")); err != nil {
		t.Errorf("the store is not in the data directory: %v", err)
	}
}

// serveBanner runs serve with args and returns what it announced once up: the text banner, or
// with -log-format json the log.
func serveBanner(t *testing.T, args ...string) (banner, log string, addr string) {
	t.Helper()
	addr = freeAddr(t)
	c, err := parseServe(append([]string{"-addr", addr, "-db", "memory", "-no-push"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	var b, l lockedBuffer
	c.ops.banner = &b
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, c, c.ops.newLogger(&l, slog.LevelInfo)) }()
	waitUp(t, addr)
	deadline := time.Now().Add(30 * time.Second)
	for b.String() == "" && !strings.Contains(l.String(), "serving") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return b.String(), l.String(), addr
}

// The banner says, readably, where the web app, the card and each binding are, which agent
// runs, where the data lives and who may call — and no secret.
func TestServeBanner(t *testing.T) {
	t.Parallel()
	grpcAddr := freeAddr(t)
	banner, _, addr := serveBanner(t, "-grpc-addr", grpcAddr, "-api-key", "sekrit-key=alice",
		"-llm-url", "http://user:pw@10.1.2.3:11434/v1?key=q", "-llm-model", "llama3.2")
	base := "http://" + addr
	for _, want := range []string{
		"web app     " + base + "/web/\n",
		"agent card  " + base + "/.well-known/agent-card.json\n",
		"capnweb     ws://" + addr + "/a2a/capnweb",
		"POST " + base + "/a2a/capnweb",
		"JSON-RPC    " + base + "/a2a/jsonrpc\n",
		"HTTP+JSON   " + base + "/a2a/rest\n",
		"gRPC        " + grpcAddr + "\n",
		"agent       a2awebcap (runtime; model llama3.2 at http://10.1.2.3:11434/v1)\n",
		"data        memory\n",
		"auth        apiKey\n",
	} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	for _, secret := range []string{"sekrit", "pw@", "key=q"} {
		if strings.Contains(banner, secret) {
			t.Errorf("banner shows a secret (%q):\n%s", secret, banner)
		}
	}
}

// -log-format json: the banner is one JSON line with the same facts, for programs.
func TestServeBannerJSON(t *testing.T) {
	t.Parallel()
	banner, log, addr := serveBanner(t, "-log-format", "json", "-agent", "builtin")
	if banner != "" {
		t.Errorf("json format printed a text banner: %q", banner)
	}
	for line := range strings.Lines(log) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if rec["msg"] != "serving" {
			continue
		}
		if rec["web"] != "http://"+addr+"/web/" || rec["card"] != "http://"+addr+"/.well-known/agent-card.json" ||
			rec["agent"] != "a2awebcap (builtin)" || rec["store"] != "memory" {
			t.Errorf("serving line = %v", rec)
		}
		return
	}
	t.Errorf("no serving line in %q", log)
}
