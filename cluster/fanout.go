package cluster

// Concurrency model
//
//   - A Fanout owns one NATS connection (nats.go's reconnecting client) and, once Listen is
//     called, one ordered JetStream consumer, whose messages nats.go hands to one goroutine of
//     its own, in stream order; that goroutine calls the engine's deliver, which must not block.
//   - Publish runs on the caller (the engine's run, after each write): it encodes, then hands
//     the message to nats.go's asynchronous publisher, which writes it in order on the
//     connection. It waits at most stallWait when maxPending publishes are unacknowledged (the
//     server is slow or gone), and then drops the message: the stream of a replica that missed
//     it reads the events from the store instead.
//   - Fanout.mu guards the consume context and the closed flag. Close stops the consumer, then
//     drains and closes the connection.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/internal/a2ajson"
)

// Options configure Connect. The zero value (or nil) is the default for each field.
type Options struct {
	// Stream names the JetStream stream that carries task events, and prefixes their subjects
	// (STREAM.task.ID). Clusters sharing a NATS server need different names. Default
	// DefaultStream.
	Stream string
	// MaxAge is how long the stream keeps an event: what a replica that lost NATS for a while
	// gets when it is back (the store has everything anyway). Default 10 minutes.
	MaxAge time.Duration
	// Replicas is the number of copies of the stream in a NATS cluster. Default 1.
	Replicas int
	// Name names the connection on the NATS server (its monitoring shows it). Default "a2awebcap".
	Name string
	// ConnectTimeout bounds the first connection. Default 10 s. Later reconnections are retried
	// for ever, every ReconnectWait.
	ConnectTimeout time.Duration
	// ReconnectWait is the pause between reconnection attempts. Default 250 ms.
	ReconnectWait time.Duration
	// Logger receives connection events and dropped messages. Nil means slog.Default().
	Logger *slog.Logger
}

// DefaultStream is the stream name Options.Stream defaults to.
const DefaultStream = "A2AWEBCAP"

// Publishing limits: how many publishes may wait for their acknowledgement, and how long
// Publish waits for room before it drops a message.
const (
	maxPending = 4096
	stallWait  = 100 * time.Millisecond
)

// Header names of a published write.
const (
	hdrReplica = "A2A-Replica"
	hdrMsgID   = "Nats-Msg-Id" // JetStream's deduplication key: task and version
)

// ErrClosed is returned by Listen on a closed Fanout, and by Ready.
var ErrClosed = errors.New("cluster: fan-out closed")

// Fanout is an engine.Fanout on NATS JetStream: every write a replica publishes, every replica
// receives. It is safe for concurrent use.
type Fanout struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream string
	prefix string // stream + ".task."
	log    *slog.Logger

	mu      sync.Mutex
	consume jetstream.ConsumeContext
	closed  bool
}

var _ engine.Fanout = (*Fanout)(nil)

// Connect connects to the NATS servers of urls (comma-separated nats:// URLs) and creates the
// stream of task events if it does not exist (or updates its limits). It fails when no server
// answers within Options.ConnectTimeout; once connected, it reconnects by itself.
func Connect(ctx context.Context, urls string, opts *Options) (*Fanout, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Stream == "" {
		o.Stream = DefaultStream
	}
	if strings.ContainsAny(o.Stream, ".*> \t\r\n") {
		return nil, fmt.Errorf("cluster: stream name %q: no dots, wildcards or spaces", o.Stream)
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 10 * time.Minute
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.Name == "" {
		o.Name = "a2awebcap"
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.ReconnectWait <= 0 {
		o.ReconnectWait = 250 * time.Millisecond
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	nc, err := nats.Connect(urls, nats.Name(o.Name), nats.Timeout(o.ConnectTimeout),
		nats.MaxReconnects(-1), nats.ReconnectWait(o.ReconnectWait),
		nats.DisconnectErrHandler(func(c *nats.Conn, err error) {
			if !c.IsClosed() {
				log.Warn("cluster: lost NATS; streams of other replicas' tasks poll the store until it is back", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("cluster: NATS is back", "server", c.ConnectedUrlRedacted()) }))
	if err != nil {
		return nil, fmt.Errorf("cluster: connecting to NATS at %s: %w", urls, err)
	}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(maxPending),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			log.Debug("cluster: an event message was not stored by NATS; other replicas read it from the store", "subject", m.Subject, "err", err)
		}))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	f := &Fanout{nc: nc, js: js, stream: o.Stream, prefix: o.Stream + ".task.", log: log}
	cctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	_, err = js.CreateOrUpdateStream(cctx, jetstream.StreamConfig{
		Name:        o.Stream,
		Description: "a2aWebCap: the events of every task, for the other replicas' streams",
		Subjects:    []string{f.prefix + ">"},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      o.MaxAge,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		Duplicates:  time.Minute,
	})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("cluster: the JetStream stream %s (is JetStream enabled on the NATS server?): %w", o.Stream, err)
	}
	return f, nil
}

// Stream is the name of the JetStream stream.
func (f *Fanout) Stream() string { return f.stream }

// subject is the subject of a task's events: the task ID in URL-safe base64, since an ID may
// hold what a subject cannot (dots, spaces, wildcards).
func (f *Fanout) subject(id a2a.TaskID) string {
	return f.prefix + base64.RawURLEncoding.EncodeToString([]byte(id))
}

// message is the payload of a published write.
type message struct {
	Version int64             `json:"v"`
	Seq     int64             `json:"seq"`
	Last    int64             `json:"last"`
	Events  []json.RawMessage `json:"events,omitempty"`
}

// Publish implements engine.Fanout. A write whose events are larger than the server takes is
// published without them (the receivers read them from the store).
func (f *Fanout) Publish(w *engine.Written) {
	data, err := encode(w, int(f.nc.MaxPayload())-1024)
	if err != nil {
		f.log.Warn("cluster: cannot encode a write's events; other replicas read them from the store", "task", w.Task, "err", err)
		return
	}
	subject := f.subject(w.Task)
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set(hdrReplica, w.Replica)
	m.Header.Set(hdrMsgID, subject[len(f.prefix):]+"."+strconv.FormatInt(w.Version, 10))
	if _, err := f.js.PublishMsgAsync(m, jetstream.WithStallWait(stallWait)); err != nil {
		f.log.Debug("cluster: event message dropped; other replicas read it from the store", "task", w.Task, "err", err)
	}
}

// encode is the payload of w: with its events when they fit in limit bytes, else without.
func encode(w *engine.Written, limit int) ([]byte, error) {
	m := message{Version: w.Version, Seq: w.Seq, Last: w.Last}
	size := 0
	for _, ev := range w.Events {
		b, err := a2ajson.AppendEvent(nil, ev)
		if err != nil {
			return nil, err
		}
		size += len(b)
		m.Events = append(m.Events, b)
	}
	if size > limit {
		m.Events = nil
	}
	return json.Marshal(m)
}

// decode reads a published write of task from replica.
func decode(replica string, task a2a.TaskID, data []byte) (*engine.Written, error) {
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("cluster: message of task %s: %w", task, err)
	}
	w := &engine.Written{Replica: replica, Task: task, Version: m.Version, Seq: m.Seq, Last: m.Last}
	for i, raw := range m.Events {
		var sr a2a.StreamResponse
		if err := json.Unmarshal(raw, &sr); err != nil {
			return nil, fmt.Errorf("cluster: event %d of task %s: %w", m.Seq+int64(i), task, err)
		}
		w.Events = append(w.Events, sr.Event)
	}
	if len(w.Events) > 0 && w.Last != w.Seq+int64(len(w.Events))-1 {
		return nil, fmt.Errorf("cluster: message of task %s: events %d to %d, but %d of them", task, w.Seq, w.Last, len(w.Events))
	}
	return w, nil
}

// Listen implements engine.Fanout: an ordered consumer of the stream, from the messages
// published after it starts. It may be called once.
func (f *Fanout) Listen(deliver func(*engine.Incoming)) (stop func(), err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	if f.consume != nil {
		return nil, errors.New("cluster: Listen called twice")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := f.js.OrderedConsumer(ctx, f.stream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		return nil, fmt.Errorf("cluster: following the stream %s: %w", f.stream, err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		id, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(m.Subject(), f.prefix))
		if err != nil || !strings.HasPrefix(m.Subject(), f.prefix) {
			return // not ours
		}
		task, replica, data := a2a.TaskID(id), m.Headers().Get(hdrReplica), m.Data()
		deliver(&engine.Incoming{Replica: replica, Task: task,
			Decode: func() (*engine.Written, error) { return decode(replica, task, data) }})
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		f.log.Debug("cluster: following the stream", "err", err)
	}))
	if err != nil {
		return nil, fmt.Errorf("cluster: following the stream %s: %w", f.stream, err)
	}
	f.consume = cc
	var once sync.Once
	return func() { once.Do(cc.Stop) }, nil
}

// Ready implements engine.Fanout: the connection is up and the stream answers.
func (f *Fanout) Ready(ctx context.Context) error {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if st := f.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("cluster: NATS connection %s", st)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := f.js.Stream(ctx, f.stream); err != nil {
		return fmt.Errorf("cluster: the JetStream stream %s: %w", f.stream, err)
	}
	return nil
}

// Close stops the consumer and closes the connection, after flushing what Publish queued (for
// at most a few seconds). It is idempotent.
func (f *Fanout) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	cc := f.consume
	f.mu.Unlock()
	if cc != nil {
		cc.Stop()
	}
	select {
	case <-f.js.PublishAsyncComplete():
	case <-time.After(2 * time.Second):
	}
	f.nc.Close()
	return nil
}
