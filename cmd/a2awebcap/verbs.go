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
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/a2awebcap/a2awebcap/client"
)

const verbsUsage = `Client verbs (against any A2A agent; URL is the agent's base URL or its card's URL):
  a2awebcap card URL                    print the agent card
  a2awebcap send URL TEXT...            send a message and wait for the result (-f FILE, -data JSON)
  a2awebcap stream URL TEXT...          send a message and print what the agent says as it comes
  a2awebcap chat URL                    talk to the agent: one line, one message, in one context
  a2awebcap get URL TASK_ID             print a task
  a2awebcap list URL                    list tasks, newest first
  a2awebcap cancel URL TASK_ID          cancel a task
  a2awebcap subscribe URL TASK_ID       print a task's events until it finishes
  a2awebcap version                     print the version of this binary
Message words that start with a dash go after --: a2awebcap send URL -- -5 degrees (a number
such as -5 after the URL is text anyway). -o json prints one JSON object per line, errors as
{"error": {...}}; -q prints only what the agent says, -v also its progress and the binding.
Run "a2awebcap VERB -h" for a verb's flags.
` + exitCodesUsage

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
	quiet   bool   // -q: only what the agent says
	verbose bool   // -v: also progress, the working log, the binding
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
	fs.BoolVar(&v.quiet, "q", false, "quiet: print only what the agent says (no progress, no hints)")
	fs.BoolVar(&v.verbose, "v", false, "verbose: also print the task's states, the agent's working log and the binding used, on standard error")
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

// runVerb runs a client verb under ctx, whose cause is errInterrupted after Ctrl-C. It returns
// flag.ErrHelp after printing help, a usageError for a wrong command line, a stateExit for a
// task that stopped short of completed, and errors printed already (reported) under -o json.
func runVerb(ctx context.Context, verb string, args []string, io stdio) error {
	if verb == "version" {
		return runVersion(args, io.out, io.err)
	}
	fs := flag.NewFlagSet(verb, flag.ContinueOnError)
	fs.SetOutput(io.err)
	var vf verbFlags
	vf.register(fs)
	var (
		taskID, contextID string
		noWait            bool
		historyLength     int
		pageSize          int
		pageToken, state  string
		lastEventID       string
		files, data       listFlag
		saveDir           string
	)
	switch verb {
	case "send", "stream", "chat":
		fs.StringVar(&contextID, "context", "", "send within this context (a conversation: chat resumes it)")
		fs.StringVar(&saveDir, "save", "", "save the files the agent returns into this `directory` (created if need be; existing files are kept)")
		if verb == "chat" {
			break
		}
		fs.StringVar(&taskID, "task", "", "continue this task (answer an input-required task)")
		fs.Var(&files, "f", "attach this `file` to the message (repeatable); its media type comes from its extension")
		fs.Var(&data, "data", "attach this `JSON` value as a data part (repeatable); @FILE reads it from a file")
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
		fmt.Fprint(fs.Output(), "\n"+exitCodesUsage)
	}
	textFrom := -1
	if verb == "send" || verb == "stream" {
		textFrom = 1
	}
	pos, err := parseInterleaved(fs, args, textFrom)
	if err != nil {
		return err
	}
	if err := checkVerbArgs(verb, pos, len(files)+len(data) > 0, &vf); err != nil {
		fmt.Fprintln(io.err, err)
		fs.Usage()
		if vf.output == "json" {
			return reportJSON(io.out, err)
		}
		return err
	}
	err = vf.run(ctx, verb, pos, io, func(ctx context.Context, c agentAPI, url string, out *renderer) error {
		switch verb {
		case "send", "stream":
			parts, err := messageParts(strings.Join(pos[1:], " "), files, data)
			if err != nil {
				return err
			}
			msg := a2a.NewMessage(a2a.MessageRoleUser, parts...)
			msg.TaskID = a2a.TaskID(taskID)
			msg.ContextID = contextID
			req := &a2a.SendMessageRequest{Message: msg, Tenant: vf.tenant}
			if verb == "stream" {
				if err := out.stream(c.SendStreamingMessage(ctx, req)); err != nil {
					return err
				}
				return out.done(url)
			}
			if noWait {
				req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
			}
			res, err := c.SendMessage(ctx, req)
			if err != nil {
				return err
			}
			if err := out.result(res, false); err != nil {
				return err
			}
			return out.done(url)
		case "chat":
			return runChat(ctx, c, url, contextID, &vf, io, out)
		case "get":
			req := &a2a.GetTaskRequest{ID: a2a.TaskID(pos[1]), Tenant: vf.tenant}
			if historyLength >= 0 {
				req.HistoryLength = &historyLength
			}
			task, err := c.GetTask(ctx, req)
			if err != nil {
				return err
			}
			return out.result(task, true)
		case "list":
			req := &a2a.ListTasksRequest{ContextID: contextID, PageSize: pageSize, PageToken: pageToken, Tenant: vf.tenant}
			if state != "" {
				req.Status = parseState(state)
			}
			res, err := c.ListTasks(ctx, req)
			if err != nil {
				return err
			}
			return (&printer{w: io.out, json: out.json}).list(res)
		case "cancel":
			task, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(pos[1]), Tenant: vf.tenant})
			if err != nil {
				return err
			}
			return out.result(task, true)
		case "subscribe":
			if lastEventID != "" {
				if _, err := strconv.ParseInt(lastEventID, 10, 64); err != nil {
					return usageError{fmt.Errorf("-last-event-id %q: want a sequence number", lastEventID)}
				}
				ctx = withServiceParam(ctx, "Last-Event-ID", lastEventID)
			}
			out.task, out.snapshots = a2a.TaskID(pos[1]), true
			if err := out.stream(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: a2a.TaskID(pos[1]), Tenant: vf.tenant})); err != nil {
				return err
			}
			return out.done(url)
		}
		return fmt.Errorf("unknown verb %q", verb)
	}, saveDir)
	return err
}

// checkVerbArgs checks a verb's positional arguments and the flags that go together.
func checkVerbArgs(verb string, pos []string, attached bool, vf *verbFlags) error {
	want := map[string]int{"card": 1, "get": 2, "list": 1, "cancel": 2, "subscribe": 2, "chat": 1}
	switch {
	case vf.output != "text" && vf.output != "json":
		return usageError{fmt.Errorf("-o %q: want text or json", vf.output)}
	case vf.quiet && vf.verbose:
		return usageError{errors.New("-q and -v do not go together")}
	case verb == "chat" && vf.output == "json":
		return usageError{errors.New("chat talks to people: -o json is for send and stream")}
	case verb == "send" || verb == "stream":
		if len(pos) < 1 || (len(pos) < 2 && !attached) {
			return usageError{fmt.Errorf("%s needs a URL and the message: text, -f FILE or -data JSON", verb)}
		}
	case len(pos) != want[verb]:
		return usageError{fmt.Errorf("%s takes %d argument(s), got %d", verb, want[verb], len(pos))}
	}
	return nil
}

// run connects to the agent at pos[0] and runs do, under -timeout (2 minutes by default,
// none for streams and chat); it reports errors as JSON under -o json, and says how to resume
// after Ctrl-C.
func (vf *verbFlags) run(ctx context.Context, verb string, pos []string, io stdio, do func(context.Context, agentAPI, string, *renderer) error, saveDir string) (err error) {
	var save *saver
	if saveDir != "" {
		if save, err = newSaver(saveDir); err != nil {
			return err
		}
		defer save.Close()
	}
	out := newRenderer(io.out, io.err, vf, save)
	url := pos[0]
	defer func() {
		if err == nil {
			return
		}
		var se stateExit
		if context.Cause(ctx) == errInterrupted {
			if verb != "chat" {
				out.interrupted(url)
			}
			err = errInterrupted
		}
		if vf.output == "json" && !errors.As(err, &se) {
			err = reportJSON(io.out, err)
		}
	}()
	timeout := vf.timeout
	if timeout == 0 && verb != "stream" && verb != "subscribe" && verb != "chat" {
		timeout = 2 * time.Minute
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	header, err := vf.header()
	if err != nil {
		return usageError{err}
	}
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
		return (&printer{w: io.out, json: out.json}).card(card)
	}
	c, chosen, err := dialAgent(ctx, url, vf.binding, header, verify)
	if err != nil {
		return err
	}
	defer c.Destroy()
	out.note("(over %s)", chosen)
	return do(ctx, c, url, out)
}

var verbArgs = map[string]string{
	"card": "", "send": "TEXT... ", "stream": "TEXT... ", "chat": "", "get": "TASK_ID ", "list": "",
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
