package main

// The client verbs: card, send, stream, get, list, cancel, subscribe, against any A2A agent.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/a2awebcap/a2awebcap/client"
)

const verbsUsage = `Client verbs (against any A2A agent; URL is the agent's base URL or its card's URL):
  a2awebcap card URL                    print the agent card
  a2awebcap send URL TEXT...            send a message and wait for the result
  a2awebcap stream URL TEXT...          send a message and print its events as they come
  a2awebcap get URL TASK_ID             print a task
  a2awebcap list URL                    list tasks, newest first
  a2awebcap cancel URL TASK_ID          cancel a task
  a2awebcap subscribe URL TASK_ID       print a task's events until it finishes
Run "a2awebcap VERB -h" for a verb's flags.
`

// agentAPI is what the verbs need of a client: a2aclient.Client's methods.
type agentAPI interface {
	SendMessage(context.Context, *a2a.SendMessageRequest) (a2a.SendMessageResult, error)
	SendStreamingMessage(context.Context, *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error]
	GetTask(context.Context, *a2a.GetTaskRequest) (*a2a.Task, error)
	ListTasks(context.Context, *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error)
	CancelTask(context.Context, *a2a.CancelTaskRequest) (*a2a.Task, error)
	SubscribeToTask(context.Context, *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error]
	Destroy() error
}

// verbFlags are the flags every client verb takes.
type verbFlags struct {
	binding string
	output  string
	headers headerFlag
	token   string
	timeout time.Duration
	tenant  string
	trust   string // JWK set file: the card must be signed by one of its keys
}

type headerFlag []string

func (h *headerFlag) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlag) Set(v string) error { *h = append(*h, v); return nil }

func (v *verbFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&v.binding, "binding", envOr("A2AWEBCAP_BINDING", "auto"), "protocol binding: auto (the best both sides speak: capnweb first), capnweb, capnweb-batch, jsonrpc, rest or grpc (A2AWEBCAP_BINDING)")
	fs.StringVar(&v.output, "o", "text", "output: text (readable) or json (one JSON object per line, for scripts)")
	fs.Var(&v.headers, "H", "extra request `header` \"Name: value\" (repeatable)")
	fs.StringVar(&v.token, "token", os.Getenv("A2AWEBCAP_TOKEN"), "bearer `token` sent as Authorization (A2AWEBCAP_TOKEN)")
	fs.DurationVar(&v.timeout, "timeout", 0, "give up after this long; 0: no limit for streams, 2m otherwise")
	fs.StringVar(&v.tenant, "tenant", "", "the tenant, for agents that serve several")
	fs.StringVar(&v.trust, "trust-keys", os.Getenv("A2AWEBCAP_TRUST_KEYS"), "refuse the agent unless its card is signed by a key of this JWK set `file` (e.g. the agent's "+cardJWKSPath+", obtained from a source you trust) (A2AWEBCAP_TRUST_KEYS)")
}

func (v *verbFlags) header() (http.Header, error) {
	h := http.Header{}
	for _, kv := range v.headers {
		k, val, ok := strings.Cut(kv, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("-H %q: want \"Name: value\"", kv)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(val))
	}
	if v.token != "" {
		h.Set("Authorization", "Bearer "+v.token)
	}
	return h, nil
}

// parseInterleaved parses flags that may come before, between or after the positional
// arguments, as users type them.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// runVerb runs a client verb; it returns flag.ErrHelp after printing help.
func runVerb(verb string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var vf verbFlags
	vf.register(fs)
	var (
		taskID, contextID string
		noWait            bool
		historyLength     int
		pageSize          int
		pageToken, state  string
		lastEventID       string
	)
	switch verb {
	case "send", "stream":
		fs.StringVar(&taskID, "task", "", "continue this task (answer an input-required task)")
		fs.StringVar(&contextID, "context", "", "send within this context")
		if verb == "send" {
			fs.BoolVar(&noWait, "no-wait", false, "return at once with the task as it starts (returnImmediately)")
		}
	case "get":
		fs.IntVar(&historyLength, "history", -1, "at most this many history messages; -1: all")
	case "list":
		fs.StringVar(&contextID, "context", "", "only tasks of this context")
		fs.StringVar(&state, "state", "", "only tasks in this state (e.g. working, completed, TASK_STATE_FAILED)")
		fs.IntVar(&pageSize, "page-size", 0, "tasks per page; 0: the server's default")
		fs.StringVar(&pageToken, "page-token", "", "the page to read (from a previous list's next page token)")
	case "subscribe":
		fs.StringVar(&lastEventID, "last-event-id", "", "resume after this event sequence number (from an event's a2awebcap.seq)")
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: a2awebcap %s URL %s[flags]\n\n", verb, verbArgs[verb])
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	want := map[string]int{"card": 1, "get": 2, "list": 1, "cancel": 2, "subscribe": 2}
	if n, ok := want[verb]; ok && len(pos) != n {
		fs.Usage()
		return fmt.Errorf("%s takes %d argument(s), got %d", verb, n, len(pos))
	}
	if (verb == "send" || verb == "stream") && len(pos) < 2 {
		fs.Usage()
		return fmt.Errorf("%s needs a URL and the message text", verb)
	}
	if vf.output != "text" && vf.output != "json" {
		return fmt.Errorf("-o %q: want text or json", vf.output)
	}
	header, err := vf.header()
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	timeout := vf.timeout
	if timeout == 0 && verb != "stream" && verb != "subscribe" {
		timeout = 2 * time.Minute
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	out := &printer{w: stdout, json: vf.output == "json"}
	url := pos[0]

	var verify func(*a2a.AgentCard) error
	if vf.trust != "" {
		if verify, err = trustedCardVerifier(vf.trust); err != nil {
			return err
		}
	}
	if verb == "card" {
		card, err := resolveCard(ctx, url, header)
		if err != nil {
			return err
		}
		if verify != nil {
			if err := verify(card); err != nil {
				return err
			}
		}
		return out.card(card)
	}
	c, chosen, err := dialAgent(ctx, url, vf.binding, header, verify)
	if err != nil {
		return err
	}
	defer c.Destroy()
	if !out.json {
		fmt.Fprintf(stderr, "(over %s)\n", chosen)
	}

	switch verb {
	case "send", "stream":
		msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(strings.Join(pos[1:], " ")))
		msg.TaskID = a2a.TaskID(taskID)
		msg.ContextID = contextID
		req := &a2a.SendMessageRequest{Message: msg, Tenant: vf.tenant}
		if verb == "stream" {
			return out.events(c.SendStreamingMessage(ctx, req))
		}
		if noWait {
			req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
		}
		res, err := c.SendMessage(ctx, req)
		if err != nil {
			return err
		}
		return out.event(res)
	case "get":
		req := &a2a.GetTaskRequest{ID: a2a.TaskID(pos[1]), Tenant: vf.tenant}
		if historyLength >= 0 {
			req.HistoryLength = &historyLength
		}
		task, err := c.GetTask(ctx, req)
		if err != nil {
			return err
		}
		return out.event(task)
	case "list":
		req := &a2a.ListTasksRequest{ContextID: contextID, PageSize: pageSize, PageToken: pageToken, Tenant: vf.tenant}
		if state != "" {
			req.Status = parseState(state)
		}
		res, err := c.ListTasks(ctx, req)
		if err != nil {
			return err
		}
		return out.list(res)
	case "cancel":
		task, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(pos[1]), Tenant: vf.tenant})
		if err != nil {
			return err
		}
		return out.event(task)
	case "subscribe":
		if lastEventID != "" {
			if _, err := strconv.ParseInt(lastEventID, 10, 64); err != nil {
				return fmt.Errorf("-last-event-id %q: want a sequence number", lastEventID)
			}
			ctx = withServiceParam(ctx, "Last-Event-ID", lastEventID)
		}
		return out.events(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: a2a.TaskID(pos[1]), Tenant: vf.tenant}))
	}
	return fmt.Errorf("unknown verb %q", verb)
}

var verbArgs = map[string]string{
	"card": "", "send": "TEXT... ", "stream": "TEXT... ", "get": "TASK_ID ", "list": "",
	"cancel": "TASK_ID ", "subscribe": "TASK_ID ",
}

// parseState accepts "working", "input-required", "TASK_STATE_WORKING", …
func parseState(s string) a2a.TaskState {
	s = strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
	if !strings.HasPrefix(s, "TASK_STATE_") {
		s = "TASK_STATE_" + s
	}
	return a2a.TaskState(s)
}

// resolveCard fetches the agent card from a base URL or the card's own URL.
func resolveCard(ctx context.Context, url string, header http.Header) (*a2a.AgentCard, error) {
	base, path := url, ""
	if i := strings.Index(url, "/.well-known/"); i >= 0 {
		base, path = url[:i], url[i:]
	}
	var opts []agentcard.ResolveOption
	if path != "" {
		opts = append(opts, agentcard.WithPath(path))
	}
	for k, vs := range header {
		for _, v := range vs {
			opts = append(opts, agentcard.WithRequestHeader(k, v))
		}
	}
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(ctx, base, opts...)
	if err != nil {
		return nil, fmt.Errorf("fetching the agent card: %w", err)
	}
	return card, nil
}

// printer writes results readably, or as JSON lines.
type printer struct {
	w    io.Writer
	json bool
}

func (p *printer) jsonLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(p.w, "%s\n", b)
	return err
}

func (p *printer) card(c *a2a.AgentCard) error {
	if p.json {
		return p.jsonLine(c)
	}
	fmt.Fprintf(p.w, "%s %s — %s\n", c.Name, c.Version, c.Description)
	fmt.Fprintf(p.w, "streaming: %v, push notifications: %v\n", c.Capabilities.Streaming, c.Capabilities.PushNotifications)
	fmt.Fprintln(p.w, "interfaces (in preference order):")
	for _, in := range c.SupportedInterfaces {
		fmt.Fprintf(p.w, "  %-28s %s  %s\n", in.ProtocolBinding, in.ProtocolVersion, in.URL)
	}
	if len(c.Skills) > 0 {
		fmt.Fprintln(p.w, "skills:")
		for _, s := range c.Skills {
			fmt.Fprintf(p.w, "  %s: %s\n", s.Name, s.Description)
		}
	}
	return nil
}

// events prints a stream as it comes; it fails with the stream's error.
func (p *printer) events(seq iter.Seq2[a2a.Event, error]) error {
	for ev, err := range seq {
		if err != nil {
			return err
		}
		if err := p.event(ev); err != nil {
			return err
		}
	}
	return nil
}

func (p *printer) event(ev a2a.Event) error {
	if p.json {
		return p.jsonLine(a2a.StreamResponse{Event: ev})
	}
	switch x := ev.(type) {
	case *a2a.Task:
		fmt.Fprintf(p.w, "task %s  %s  (context %s)\n", x.ID, stateName(x.Status.State), x.ContextID)
		if t := messageText(x.Status.Message); t != "" {
			fmt.Fprintf(p.w, "  %s\n", t)
		}
		for _, a := range x.Artifacts {
			fmt.Fprintf(p.w, "  artifact %s: %s\n", artifactName(a), partsText(a.Parts))
		}
	case *a2a.Message:
		fmt.Fprintf(p.w, "%s: %s\n", strings.ToLower(strings.TrimPrefix(string(x.Role), "ROLE_")), messageText(x))
	case *a2a.TaskStatusUpdateEvent:
		line := "status " + stateName(x.Status.State)
		if t := messageText(x.Status.Message); t != "" {
			line += ": " + t
		}
		fmt.Fprintln(p.w, line)
	case *a2a.TaskArtifactUpdateEvent:
		mark := ""
		if x.Append {
			mark = " (+)"
		}
		fmt.Fprintf(p.w, "artifact %s%s: %s\n", artifactName(x.Artifact), mark, partsText(x.Artifact.Parts))
	}
	return nil
}

func (p *printer) list(res *a2a.ListTasksResponse) error {
	if p.json {
		return p.jsonLine(res)
	}
	for _, t := range res.Tasks {
		fmt.Fprintf(p.w, "%s  %-15s %s\n", t.ID, stateName(t.Status.State), t.Status.Timestamp.Format(time.RFC3339))
	}
	if res.NextPageToken != "" {
		fmt.Fprintf(p.w, "more: -page-token %s\n", res.NextPageToken)
	}
	return nil
}

func stateName(s a2a.TaskState) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(string(s), "TASK_STATE_"), "_", "-"))
}

func artifactName(a *a2a.Artifact) string {
	if a == nil {
		return ""
	}
	if a.Name != "" {
		return a.Name
	}
	return string(a.ID)
}

func messageText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	return partsText(m.Parts)
}

func partsText(parts a2a.ContentParts) string {
	var out []string
	for _, p := range parts {
		if t := p.Text(); t != "" {
			out = append(out, t)
			continue
		}
		b, err := json.Marshal(p)
		if err == nil {
			out = append(out, string(b))
		}
	}
	return strings.Join(out, " ")
}

// verbError decorates an A2A error with its reason, for the user.
func verbError(err error) error {
	if err == nil {
		return nil
	}
	if reason := a2a.ErrorReason(err); reason != "INTERNAL_ERROR" || errors.Is(err, a2a.ErrInternalError) {
		return fmt.Errorf("%w [%s]", err, reason)
	}
	return err
}

// withServiceParam adds a service parameter to the calls made with ctx.
func withServiceParam(ctx context.Context, key, value string) context.Context {
	p := a2aclient.ServiceParams{}
	p.Append(key, value)
	return a2aclient.AttachServiceParams(ctx, p)
}

// dialAgent connects to the agent at url over the named binding ("auto": the best one the card
// and the client share), and says which it chose.
func dialAgent(ctx context.Context, url, bindingName string, header http.Header, verify func(*a2a.AgentCard) error) (agentAPI, string, error) {
	opts := &client.Options{Header: header, VerifyCard: verify}
	if bindingName != "auto" && bindingName != "" {
		opts.Binding = client.Binding(bindingName)
	}
	c, err := client.New(ctx, url, opts)
	if err != nil {
		return nil, "", err
	}
	iface := c.Interface()
	return c, fmt.Sprintf("%s at %s", c.Binding(), iface.URL), nil
}
