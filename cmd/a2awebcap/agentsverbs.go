package main

// The agents verbs: search, show, register and unregister agents in a registry
// (docs/multi-agent.md).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/a2awebcap/a2awebcap/registry"
)

const agentsUsage = `Agent registry verbs (REGISTRY is the registry server's URL; docs/multi-agent.md):
  a2awebcap agents search REGISTRY                find agents (-skill, -tag, -name, -state, -mine)
  a2awebcap agents show REGISTRY ID               an agent's entry and card
  a2awebcap agents register REGISTRY AGENT_URL    list an agent (its base URL or its card's)
  a2awebcap agents unregister REGISTRY ID         remove your registration of an agent
`

var agentsArgs = map[string][]string{"search": nil, "show": {"ID"}, "register": {"AGENT_URL"}, "unregister": {"ID"}}

// runAgentsVerb runs "a2awebcap agents SUB REGISTRY ..."; it returns flag.ErrHelp after
// printing help.
func runAgentsVerb(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, agentsUsage)
		return flag.ErrHelp
	}
	sub, args := args[0], args[1:]
	names, ok := agentsArgs[sub]
	if !ok {
		fmt.Fprint(stderr, agentsUsage)
		return fmt.Errorf("agents: unknown verb %q", sub)
	}
	fs := flag.NewFlagSet("agents "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var vf verbFlags
	vf.register(fs)
	var q registry.Query
	var state string
	if sub == "search" {
		fs.StringVar(&q.Skill, "skill", "", "agents with a skill whose ID or name contains this")
		fs.StringVar(&q.Tag, "tag", "", "agents with a skill tagged exactly this")
		fs.StringVar(&q.Name, "name", "", "agents whose name contains this")
		fs.StringVar(&state, "state", "", "reachable, unreachable or invalid")
		fs.BoolVar(&q.Mine, "mine", false, "only your registrations")
		fs.IntVar(&q.PageSize, "page-size", 0, "agents per page (1 to 200); 0: the registry's default")
		fs.StringVar(&q.PageToken, "page-token", "", "the page after the one that gave this token")
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1+len(names) {
		fs.Usage()
		return fmt.Errorf("agents %s: want REGISTRY %s", sub, strings.Join(names, " "))
	}
	if vf.output != "text" && vf.output != "json" {
		return fmt.Errorf("-o %q: want text or json", vf.output)
	}
	q.State = registry.State(state)
	h, err := vf.header()
	if err != nil {
		return err
	}
	timeout := vf.timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := registry.NewClient(pos[0], &registry.ClientOptions{Header: h})
	var out any
	switch sub {
	case "search":
		out, err = c.Search(ctx, q)
	case "show":
		out, err = c.Get(ctx, pos[1])
	case "register":
		out, err = c.Register(ctx, pos[1])
	case "unregister":
		err = c.Unregister(ctx, pos[1])
	}
	if err != nil {
		var rerr *registry.Error
		if errors.As(err, &rerr) {
			return fmt.Errorf("%s (%d %s)", rerr.Message, rerr.Status, rerr.Reason)
		}
		return err
	}
	if vf.output == "json" {
		if out == nil {
			out = map[string]any{}
		}
		enc := json.NewEncoder(stdout)
		return enc.Encode(out)
	}
	switch v := out.(type) {
	case *registry.Page:
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSTATE\tSIGNATURE\tSKILLS\tURL")
		for _, e := range v.Agents {
			var skills []string
			for _, s := range e.Card.Skills {
				skills = append(skills, s.ID)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Card.Name, e.State, e.Signature, strings.Join(skills, ","), e.URL)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if v.NextPageToken != "" {
			fmt.Fprintf(stdout, "more: -page-token %s\n", v.NextPageToken)
		}
	case *registry.Entry:
		printEntry(stdout, v)
	default:
		fmt.Fprintln(stdout, "unregistered")
	}
	return nil
}

func printEntry(w io.Writer, e *registry.Entry) {
	fmt.Fprintf(w, "%s  %s\n  url: %s\n  state: %s", e.ID, e.Card.Name, e.URL, e.State)
	if e.LastError != "" {
		fmt.Fprintf(w, " (%d failed checks: %s)", e.Failures, e.LastError)
	}
	fmt.Fprintf(w, "\n  signature: %s\n  registrations: %d (yours: %v)\n  checked: %s\n", e.Signature, e.Registrations, e.Mine, e.CheckedAt.Format(time.RFC3339))
	if e.Card.Description != "" {
		fmt.Fprintf(w, "  description: %s\n", e.Card.Description)
	}
	for _, s := range e.Card.Skills {
		fmt.Fprintf(w, "  skill %s: %s", s.ID, s.Name)
		if len(s.Tags) > 0 {
			fmt.Fprintf(w, " [%s]", strings.Join(s.Tags, ", "))
		}
		fmt.Fprintln(w)
	}
}
