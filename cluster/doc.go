// Package cluster is what a2aWebCap needs, beside a shared PostgreSQL store, to run as several
// replicas behind a load balancer (docs/cluster.md): the fan-out of every task's events to every
// replica through NATS JetStream (Fanout, an engine.Fanout).
//
// The engine owns the rest of cluster mode: task leases, takeover and hand-over
// (engine.Options.Cluster, on the store's lease methods). This package only carries news: the
// events a replica wrote, after it wrote them, so that streams on the other replicas see them at
// once. A message lost or repeated changes nothing — the engine deduplicates by sequence number
// and reads what it misses from the store.
//
//	fan, err := cluster.Connect(ctx, "nats://127.0.0.1:4222", nil)
//	if err != nil { … }
//	defer fan.Close()
//	eng := engine.New(exec, pgStore, &engine.Options{Cluster: &engine.Cluster{Fanout: fan}})
package cluster
