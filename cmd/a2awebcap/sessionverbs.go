package main

// The session verbs: the sessions extension (docs/sessions.md) of an a2aWebCap agent, over any
// binding.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent/session"
	"github.com/a2awebcap/a2awebcap/client"
)

const sessionUsage = `Session verbs (the chat sessions of an a2aWebCap agent, each an A2A context; docs/sessions.md):
  a2awebcap session list URL                      your sessions, most recently updated first
  a2awebcap session metrics URL CONTEXT           state, turns, tokens, cost, latency, budgets
  a2awebcap session history URL CONTEXT           the turns (-from N, -limit N)
  a2awebcap session context URL CONTEXT           what the model would be given for the next message
  a2awebcap session reset URL CONTEXT             clear the conversation (the history stays)
  a2awebcap session fork URL CONTEXT              a new session from this one (-turn N, -new ID)
  a2awebcap session merge URL CONTEXT FROM        fold session FROM into CONTEXT (-mode turns|summary)
`

var sessionArgs = map[string][]string{
	"list": nil, "metrics": {"CONTEXT"}, "history": {"CONTEXT"}, "context": {"CONTEXT"},
	"reset": {"CONTEXT"}, "fork": {"CONTEXT"}, "merge": {"CONTEXT", "FROM"},
}

// runSessionVerb runs "a2awebcap session SUB URL ..."; it returns flag.ErrHelp after printing help.
func runSessionVerb(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, sessionUsage)
		return flag.ErrHelp
	}
	sub, args := args[0], args[1:]
	names, ok := sessionArgs[sub]
	if !ok {
		fmt.Fprint(stderr, sessionUsage)
		return fmt.Errorf("session: unknown verb %q", sub)
	}
	fs := flag.NewFlagSet("session "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var vf verbFlags
	vf.register(fs)
	var (
		from, limit, pageSize, turn int
		pageToken, newID, mode      string
	)
	switch sub {
	case "list":
		fs.IntVar(&pageSize, "page-size", 0, "sessions per page; 0: the server's default")
		fs.StringVar(&pageToken, "page-token", "", "the page to read (from a previous list)")
	case "history":
		fs.IntVar(&from, "from", 0, "the first turn to show")
		fs.IntVar(&limit, "limit", 0, "at most this many turns; 0: the server's default (100)")
	case "fork":
		fs.IntVar(&turn, "turn", -1, "fork after this turn; -1: the last")
		fs.StringVar(&newID, "new", "", "the new session's context ID; empty: the server chooses")
	case "merge":
		fs.StringVar(&mode, "mode", string(session.MergeTurns), "what to fold in: turns (each turn) or summary (its summary and facts)")
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: a2awebcap session %s URL %s[flags]\n\n", sub, strings.Join(append(names, ""), " "))
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1+len(names) {
		fs.Usage()
		return fmt.Errorf("session %s takes %d argument(s), got %d", sub, 1+len(names), len(pos))
	}
	if vf.output != "text" && vf.output != "json" {
		return fmt.Errorf("-o %q: want text or json", vf.output)
	}
	ctx, c, done, err := vf.connect(pos[0], stderr)
	if err != nil {
		return err
	}
	defer done()
	out := &printer{w: stdout, json: vf.output == "json"}
	s := c.Sessions()
	ref := func() *session.Ref { return &session.Ref{Tenant: vf.tenant, ContextID: pos[1]} }
	var res any
	switch sub {
	case "list":
		res, err = s.List(ctx, &session.ListRequest{Tenant: vf.tenant, PageSize: pageSize, PageToken: pageToken})
	case "metrics":
		res, err = s.Metrics(ctx, ref())
	case "history":
		res, err = s.History(ctx, &session.HistoryRequest{Tenant: vf.tenant, ContextID: pos[1], From: from, Limit: limit})
	case "context":
		res, err = s.Context(ctx, ref())
	case "reset":
		res, err = s.Reset(ctx, ref())
	case "fork":
		req := &session.ForkRequest{Tenant: vf.tenant, ContextID: pos[1], NewContextID: newID}
		if turn >= 0 {
			req.Turn = &turn
		}
		res, err = s.Fork(ctx, req)
	case "merge":
		res, err = s.Merge(ctx, &session.MergeRequest{Tenant: vf.tenant, ContextID: pos[1], From: pos[2], Mode: session.MergeMode(mode)})
	}
	if err != nil {
		return extVerbError(err)
	}
	if out.json {
		return out.jsonLine(res)
	}
	switch r := res.(type) {
	case *session.ListResponse:
		for _, m := range r.Sessions {
			fmt.Fprintf(stdout, "%s  %-9s turns %-4d tokens %d in / %d out  updated %s\n", m.ID, m.State, m.Turn, m.Used.In, m.Used.Out,
				m.Updated.Format(time.RFC3339))
		}
		if r.NextPageToken != "" {
			fmt.Fprintf(stdout, "more: -page-token %s\n", r.NextPageToken)
		}
	case *session.History:
		for _, t := range r.Turns {
			mark := ""
			if t.Origin != nil {
				mark = fmt.Sprintf("  (from session %s)", t.Origin.Session)
			}
			fmt.Fprintf(stdout, "#%d %s%s\n", t.Number, t.Status, mark)
			if t.User.Content != "" {
				fmt.Fprintf(stdout, "  user:  %s\n", t.User.Content)
			}
			if t.Response.Content != "" {
				fmt.Fprintf(stdout, "  agent: %s\n", t.Response.Content)
			}
		}
		if r.Next != 0 {
			fmt.Fprintf(stdout, "more: -from %d\n", r.Next)
		}
	case *session.Window:
		for _, m := range r.Messages {
			fmt.Fprintf(stdout, "[%s] %s\n", m.Role, m.Content)
		}
		fmt.Fprintf(stdout, "(%s: %d of %d tokens; turns shown %v, omitted %v, %d facts listed)\n",
			r.Strategy, r.Tokens, r.Limit, r.Verbatim, r.Omitted, len(r.Facts))
	case *session.Metrics:
		printMetrics(stdout, r)
	}
	return nil
}

func printMetrics(w io.Writer, m *session.Metrics) {
	fmt.Fprintf(w, "session %s: %s, turn %d (strategy %s, window %d, context %d tokens)\n", m.ID, m.State, m.Turn, m.Strategy, m.Window, m.Context)
	fmt.Fprintf(w, "used: %d tokens in, %d out", m.Used.In, m.Used.Out)
	if m.Used.Estimated {
		fmt.Fprint(w, " (some estimated)")
	}
	fmt.Fprintf(w, ", cost %s", m.Used.Cost)
	if m.Used.CostUnknown {
		fmt.Fprint(w, " (some unknown)")
	}
	fmt.Fprintf(w, ", latency mean %v, max %v\n", m.LatencyMean, m.LatencyMax)
	for _, b := range m.Budgets {
		fmt.Fprintf(w, "budget %s: %d of %d used, %d left\n", b.Budget, b.Used, b.Limit, b.Left)
	}
	for _, x := range m.Warnings {
		fmt.Fprintf(w, "warning: %s\n", x.Text)
	}
	if m.Collapse != nil {
		fmt.Fprintf(w, "ended: %s at turn %d\n", m.Collapse.Reason, m.Collapse.Turn)
	}
	if m.Origin != nil {
		fmt.Fprintf(w, "forked from session %s at turn %d\n", m.Origin.Session, m.Origin.Turn)
	}
}

// connect connects a client to the agent at url with the verb's flags, under a context bounded
// by -timeout (2 minutes by default) and the process's signals; done releases both.
func (vf *verbFlags) connect(url string, stderr io.Writer) (context.Context, *client.Client, func(), error) {
	header, err := vf.header()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	timeout := vf.timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	fail := func(err error) (context.Context, *client.Client, func(), error) {
		cancel()
		stop()
		return nil, nil, nil, err
	}
	var verify func(*a2a.AgentCard) error
	if vf.trust != "" {
		if verify, err = trustedCardVerifier(vf.trust); err != nil {
			return fail(err)
		}
	}
	opts := &client.Options{Header: header, VerifyCard: verify}
	if vf.binding != "auto" && vf.binding != "" {
		opts.Binding = client.Binding(vf.binding)
	}
	c, err := client.New(ctx, url, opts)
	if err != nil {
		return fail(err)
	}
	if vf.verbose && vf.output != "json" {
		fmt.Fprintf(stderr, "(over %s at %s)\n", c.Binding(), c.Interface().URL)
	}
	return ctx, c, func() { _ = c.Destroy(); cancel(); stop() }, nil
}

// extVerbError is an extension's error for the user, with its reason.
func extVerbError(err error) error {
	var ee *client.ExtError
	if errors.As(err, &ee) && ee.Reason != "" {
		return fmt.Errorf("%s [%s]", ee.Message, ee.Reason)
	}
	return err
}
