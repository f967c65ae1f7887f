package main

// Starting and stopping the clusters: a database, a JetStream stream, the replica processes
// and the balancer of each; the clients that reach them.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/clustertest"

	"github.com/a2awebcap/a2awebcap/bench/internal/harness"
)

// clusterUnderTest is one cluster: n replicas on a database and a stream of their own.
type clusterUnderTest struct {
	label    string // "2 replicas"
	n        int
	db       string // the database's name
	dsn      string
	stream   string
	procs    []*harness.Process
	addrs    []string // each replica's host:port
	lb       *balancer
	viaLB    []*client.Client // clients through the balancer, one connection each
	direct   []*client.Client // one client per replica, reaching it directly
	bindName client.Binding
}

func label(n int) string {
	if n == 1 {
		return "1 replica"
	}
	return fmt.Sprintf("%d replicas", n)
}

// startCluster creates the database and the stream of a cluster of n replicas, and starts it.
// On error, what was started is stopped.
func startCluster(ctx context.Context, cfg *config, admin *pgx.Conn, n int) (c *clusterUnderTest, err error) {
	c = &clusterUnderTest{label: label(n), n: n, db: clustertest.Name("a2a_bench"), stream: clustertest.Name("A2ABENCH"),
		bindName: client.Binding(cfg.binding)}
	defer func() {
		if err != nil {
			c.stop(cfg, admin)
		}
	}()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{c.db}.Sanitize()); err != nil {
		c.db = ""
		return nil, fmt.Errorf("creating database: %w", err)
	}
	pc := admin.Config()
	c.dsn = fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", pc.User, pc.Host, pc.Port, c.db)
	if pc.Password != "" {
		c.dsn = fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", url.UserPassword(pc.User, pc.Password), pc.Host, pc.Port, c.db)
	}
	if cfg.pool > 0 {
		c.dsn += fmt.Sprintf("&pool_max_conns=%d", cfg.pool)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	for i := range n {
		name := fmt.Sprintf("r%d-of-%d", i+1, n)
		p, err := harness.Start(ctx, name, []string{self, "-role", "replica", "-name", name, "-db", c.dsn, "-nats", cfg.nats, "-stream", c.stream},
			harness.StartOptions{PortFlag: "-port", Timeout: 60 * time.Second, StopGrace: 10 * time.Second})
		if err != nil {
			return nil, err
		}
		c.procs = append(c.procs, p)
		c.addrs = append(c.addrs, fmt.Sprintf("127.0.0.1:%d", p.Port))
	}
	if c.lb, err = newBalancer(c.addrs); err != nil {
		return nil, err
	}
	clients := max(cfg.senders, cfg.streams)
	for range clients {
		cl, err := client.New(ctx, "http://"+c.lb.addr(), &client.Options{Binding: c.bindName})
		if err != nil {
			return nil, fmt.Errorf("client through the balancer: %w", err)
		}
		c.viaLB = append(c.viaLB, cl)
	}
	for _, a := range c.addrs {
		cl, err := client.New(ctx, "http://"+a, &client.Options{Binding: c.bindName})
		if err != nil {
			return nil, fmt.Errorf("client of %s: %w", a, err)
		}
		c.direct = append(c.direct, cl)
	}
	return c, nil
}

// stop closes the clients, stops the replicas and the balancer, and drops the database and
// the stream.
func (c *clusterUnderTest) stop(cfg *config, admin *pgx.Conn) {
	for _, cl := range append(c.viaLB, c.direct...) {
		cl.Destroy()
	}
	harness.StopAll(c.procs)
	if c.lb != nil {
		c.lb.close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c.db != "" {
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{c.db}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "dropping database %s: %v\n", c.db, err)
		}
	}
	if err := deleteStream(ctx, cfg.nats, c.stream); err != nil {
		fmt.Fprintf(os.Stderr, "deleting stream %s: %v\n", c.stream, err)
	}
}

// alive reports an error if a replica of the cluster exited.
func (c *clusterUnderTest) alive() error {
	for _, p := range c.procs {
		if err := p.Alive(); err != nil {
			return err
		}
	}
	return nil
}

func deleteStream(ctx context.Context, url, stream string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if err := js.DeleteStream(ctx, stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	return nil
}
