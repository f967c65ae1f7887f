// Package push delivers A2A push notifications by webhook, from the store's durable outbox,
// and verifies them on the receiving side.
//
// Every event the engine writes for a task enqueues, in the same store transaction, one
// delivery per push config of the task (see store.Store). A Deliverer claims due deliveries
// (a lease: several processes may run one on a store), POSTs each event as an
// a2a.StreamResponse to the config's URL, deletes it on a 2xx answer, and otherwise retries
// with exponential backoff and jitter, dropping it (logged) after Options.MaxAttempts.
// Undelivered rows survive a restart: delivery is at least once. A slow or dead receiver delays
// only its own deliveries: a Deliverer has no batches, and the store's claim bounds what one
// principal has in flight, to one destination (Options.PerDestination) and in all
// (Options.PerPrincipal), and gives principals turns.
//
// Each delivery carries the config's authentication (Authorization: scheme credentials), its
// token (X-A2A-Notification-Token), a delivery ID (X-A2A-Push-Delivery, the same on every
// attempt) and a signature (X-A2A-Push-Signature): a compact ES256 JWS whose claims hold the
// delivery ID, the time, the URL, the task, the event's sequence number and the SHA-256 of the
// body. The server publishes its key at JWKSPath; a receiver checks deliveries with a
// Verifier:
//
//	v := push.NewVerifier("https://agent.example"+push.JWKSPath, &push.VerifierOptions{Audience: myURL})
//	http.Handle("/hook", push.NewReceiver(v, func(ctx context.Context, n *push.Notification) error {
//		log.Printf("task %s event %d: %v", n.TaskID, n.Seq, n.Event)
//		return nil
//	}))
//
// Deliveries only go to public addresses, by package netguard's rule: the address actually
// dialed (after resolution, so DNS rebinding is covered) must not be in an IANA special-purpose
// block — loopback, private, link-local (cloud metadata) and the rest — nor multicast, nor an
// IPv6 form that embeds such an IPv4 address (NAT64, 6to4, Teredo, IPv4-mapped), unless
// Options.Allow or Options.AllowHosts list it; redirects are not followed. Deliverer.CheckURL
// applies the same rule when a config is created.
package push
