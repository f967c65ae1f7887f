// Package push delivers A2A push notifications by webhook, from the store's durable outbox,
// and verifies them on the receiving side.
//
// Every event the engine writes for a task enqueues, in the same store transaction, one
// delivery per push config of the task (see store.Store). A Deliverer claims due deliveries
// (a lease: several processes may run one on a store), POSTs each event as an
// a2a.StreamResponse to the config's URL, deletes it on a 2xx answer, and otherwise retries
// with exponential backoff and jitter, dropping it (logged) after Options.MaxAttempts.
// Undelivered rows survive a restart: delivery is at least once.
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
// Deliveries only go to public addresses: the address actually dialed (after resolution, so
// DNS rebinding is covered) must not be loopback, private, link-local (cloud metadata),
// unspecified or multicast, unless Options.Allow or Options.AllowHosts list it; redirects are
// not followed. Deliverer.CheckURL applies the same rule when a config is created.
package push
