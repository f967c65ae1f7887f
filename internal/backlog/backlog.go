// Package backlog lets the producer of a stream of events tell the writer of each event, as it
// hands it over, whether another is already in hand to follow at once. A writer that sends
// every event as it comes (an SSE response flushed per event, one system call each) may then
// hold its flush until the last event of a burst, and send the burst in one write.
//
// The engine's event streams report it (engine.Engine's advance); the binding's SSE writers
// read it. The two do not import each other, so the hint travels in the request's context.
package backlog

import (
	"context"
	"sync/atomic"
)

// Hint is a stream's backlog hint. The producer sets More before it hands over each event;
// the writer reads it when it has written an event. The two may run on different goroutines,
// with events queued between them (a2a-go's handlers hand them over a channel): a writer that
// reads More while the producer is ahead reads it about a later event, which still means that
// more follow. The last event before the producer waits, or ends, always says false.
type Hint struct {
	// More: another event is in hand and follows this one at once.
	More atomic.Bool
}

type key struct{}

// With returns a context carrying h: streams produced under it report to h.
func With(ctx context.Context, h *Hint) context.Context { return context.WithValue(ctx, key{}, h) }

// From returns the hint ctx carries, or nil.
func From(ctx context.Context) *Hint {
	h, _ := ctx.Value(key{}).(*Hint)
	return h
}
