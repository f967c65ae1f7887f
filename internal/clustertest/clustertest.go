// Package clustertest gives tests the real servers of cluster mode: the NATS server with
// JetStream every machine runs (127.0.0.1:4222), a private NATS server a test may stop and
// start, and a PostgreSQL database of its own. Each skips the test, saying why, when its
// server is missing, unless the environment variable CI is set: there it is a failure.
package clustertest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// missing skips (or, under CI, fails) t for want of a server.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// NATSEnv names the URL of the NATS server to test against; default DefaultNATS.
const NATSEnv = "A2A_NATS_URL"

// DefaultNATS is the NATS server (with JetStream) the project's machines run.
const DefaultNATS = "nats://127.0.0.1:4222"

// NATS returns the URL of the shared NATS server, after checking that it answers.
func NATS(t testing.TB) string {
	t.Helper()
	url := DefaultNATS
	if env := os.Getenv(NATSEnv); env != "" {
		url = env
	}
	host := strings.TrimPrefix(strings.Split(url, ",")[0], "nats://")
	c, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err != nil {
		missing(t, "no NATS server at %s (set %s): %v", url, NATSEnv, err)
	}
	c.Close()
	return url
}

// Name returns a name unique to this test run, for streams, databases and schemas: prefix
// and a random suffix, upper or lower case as the prefix is.
func Name(prefix string) string {
	s := strings.ToLower(rand.Text()[:10])
	if strings.ToUpper(prefix) == prefix {
		s = strings.ToUpper(s)
	}
	return prefix + "_" + s
}

// Server is a private nats-server with JetStream, on a port and a store directory of its own.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
}

// PrivateNATS starts a nats-server -js of the test's own (the Debian binary, or one on PATH),
// stopped when the test ends.
func PrivateNATS(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nats-server"); serr == nil {
			bin, err = "/usr/sbin/nats-server", nil
		}
	}
	if err != nil {
		missing(t, "no nats-server binary (apt-get install nats-server): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &Server{t: t, bin: bin, dir: t.TempDir(), port: port}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// URL is the server's nats:// URL.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.port) }

// Start starts the server (again, after Stop: same port, same store) and waits until it
// accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(s.port), "-sd", filepath.Join(s.dir, "js"))
	s.cmd.Stdout, s.cmd.Stderr = nil, nil
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("starting nats-server: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("nats-server did not come up on port %d: %v", s.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the server (SIGTERM, then SIGKILL after a few seconds) and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	cmd := s.cmd
	s.cmd = nil
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// PostgresEnv names the DSN of the PostgreSQL server to test against (any database on it).
const PostgresEnv = "A2A_POSTGRES_DSN"

var pgCandidates = []string{
	"postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
	"postgres://root@127.0.0.1:5432/test?sslmode=disable",
}

// Postgres creates a database of the test's own on the local PostgreSQL server and returns its
// DSN; the database is dropped when the test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	try := pgCandidates
	if env := os.Getenv(PostgresEnv); env != "" {
		try = []string{env}
	}
	var errs []string
	for _, dsn := range try {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, dsn)
		cancel()
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		name := Name("a2a_cluster")
		if _, err := conn.Exec(context.Background(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			conn.Close(context.Background())
			t.Fatalf("creating database %s: %v", name, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			conn.Close(ctx)
		})
		cfg, _ := pgx.ParseConfig(dsn)
		return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	}
	missing(t, "no PostgreSQL server to test against (set %s): %s", PostgresEnv, strings.Join(errs, "; "))
	return ""
}
