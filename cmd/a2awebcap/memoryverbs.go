package main

// The memory verbs: the memory extension (docs/sessions.md, "Your memory") of an a2aWebCap
// agent, over any binding: what the agent remembers about the caller, and asking it to forget.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
)

const memoryUsage = `Memory verbs (what an a2aWebCap agent remembers about you):
  a2awebcap memory list URL [-history]            your beliefs, with where each came from
  a2awebcap memory forget URL BELIEF [REASON...]  ask the agent to forget one (its rules decide)
`

// runMemoryVerb runs "a2awebcap memory SUB URL ..."; it returns flag.ErrHelp after printing help.
func runMemoryVerb(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, memoryUsage)
		return flag.ErrHelp
	}
	sub, args := args[0], args[1:]
	if sub != "list" && sub != "forget" {
		fmt.Fprint(stderr, memoryUsage)
		return fmt.Errorf("memory: unknown verb %q", sub)
	}
	fs := flag.NewFlagSet("memory "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var vf verbFlags
	vf.register(fs)
	history := false
	if sub == "list" {
		fs.BoolVar(&history, "history", false, "also list superseded and forgotten beliefs")
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: a2awebcap memory %s URL %s[flags]\n\n", sub, map[string]string{"list": "", "forget": "BELIEF [REASON...] "}[sub])
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if (sub == "list" && len(pos) != 1) || (sub == "forget" && len(pos) < 2) {
		fs.Usage()
		return fmt.Errorf("memory %s: wrong number of arguments (%d)", sub, len(pos))
	}
	if vf.output != "text" && vf.output != "json" {
		return fmt.Errorf("-o %q: want text or json", vf.output)
	}
	ctx, c, done, err := vf.connect(pos[0], stderr)
	if err != nil {
		return err
	}
	defer done()
	var res json.RawMessage
	if sub == "list" {
		res, err = c.Memory().Get(ctx, vf.tenant, history)
	} else {
		res, err = c.Memory().Forget(ctx, vf.tenant, pos[1], strings.Join(pos[2:], " "))
	}
	if err != nil {
		return extVerbError(err)
	}
	if vf.output == "json" {
		return printRawJSON(stdout, res, true)
	}
	return printMemory(stdout, sub, res)
}

// wireBelief is a belief of the memory extension, as the text output reads it.
type wireBelief struct {
	ID, Subject, Value, Status string
	Confidence                 float64
	Provenance                 struct {
		Source  struct{ Kind, Name string }
		Context struct {
			Session string
			Turn    int
		}
		Rule, Reason string
	}
}

func (b wireBelief) line() string {
	var s strings.Builder
	fmt.Fprintf(&s, "%s  %s = %s  (%.0f%%", b.ID, b.Subject, b.Value, 100*b.Confidence)
	if b.Status != "active" {
		s.WriteString(", " + b.Status)
	}
	p := b.Provenance
	from := p.Source.Kind
	if p.Source.Name != "" {
		from += " " + p.Source.Name
	}
	fmt.Fprintf(&s, "; from %s, rule %s: %s", from, p.Rule, p.Reason)
	if p.Context.Session != "" {
		fmt.Fprintf(&s, "; conversation %s, turn %d", p.Context.Session, p.Context.Turn)
	}
	return s.String() + ")"
}

// printMemory writes a memory extension result readably.
func printMemory(w io.Writer, sub string, res json.RawMessage) error {
	if sub == "forget" {
		var r struct {
			Forgotten bool
			Reply     string
			Belief    wireBelief
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return err
		}
		verdict := "kept"
		if r.Forgotten {
			verdict = "forgotten"
		}
		_, err := fmt.Fprintf(w, "%s (the agent said: %s)\n%s\n", verdict, r.Reply, r.Belief.line())
		return err
	}
	var r struct {
		Beliefs []wireBelief
		Working []struct {
			Subject, Value string
			Uses           int
		}
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return err
	}
	if len(r.Beliefs) == 0 && len(r.Working) == 0 {
		_, err := fmt.Fprintln(w, "The agent remembers nothing about you.")
		return err
	}
	for _, b := range r.Beliefs {
		if _, err := fmt.Fprintln(w, b.line()); err != nil {
			return err
		}
	}
	for _, n := range r.Working {
		if _, err := fmt.Fprintf(w, "noted  %s = %s  (working memory, used %d times)\n", n.Subject, n.Value, n.Uses); err != nil {
			return err
		}
	}
	return nil
}
