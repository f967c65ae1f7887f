// Command research is a small multi-agent system (docs/multi-agent.md, "An example: a
// researcher and a writer"): a researcher agent that reads a library site through its fetch
// capability, and a writer agent that finds it in a registry by its skill, calls it through
// its a2a capability, and writes up what it found, citing the researcher, its task and the
// page. One server hosts both agents and the registry, on 127.0.0.1; so does the library.
//
//	go run ./examples/research "write about alexandria"
//
// It prints the writer's task as it streams — the researcher's events relayed into it marked
// "from agent http://…/agents/researcher" — then what the writer now remembers, and why.
//
// The agents are the definitions in agents/ (embedded): the same files run under
// `a2awebcap serve -agents examples/research/agents -x402-facilitator
// http://127.0.0.1:8391/x402`, paid (the library site and that facilitator are this program's,
// with -library-only).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agent"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./examples/research [flags] [message]\n\n"+
			"Sends the message (default %q) to the writer and prints its task as it streams.\n\n", defaultMessage)
		flag.PrintDefaults()
	}
	to := flag.String("to", "writer", "the agent to send the message to: writer or researcher")
	libraryOnly := flag.Bool("library-only", false, "serve only the library site, and an x402 facilitator at /x402, on "+DefaultLibraryAddr+", until interrupted (for the agents under `a2awebcap serve`)")
	flag.Parse()
	msg := strings.Join(flag.Args(), " ")
	if msg == "" {
		msg = defaultMessage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *libraryOnly {
		fmt.Printf("library   http://%s\nx402      http://%s/x402\n", DefaultLibraryAddr, DefaultLibraryAddr)
		if err := serveLibrary(ctx, DefaultLibraryAddr); err != nil {
			fmt.Fprintln(os.Stderr, "research:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, Options{}, *to, msg, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "research:", err)
		os.Exit(1)
	}
}

const defaultMessage = "write about alexandria"

// run starts the system, sends msg to the agent named to, prints the conversation and what
// the agent remembers, and stops the system. When the task asks for input, a line read from in
// answers it on the same task; at the end of in, the task is left waiting.
func run(ctx context.Context, o Options, to, msg string, in io.Reader, w io.Writer) error {
	sys, err := Start(ctx, o)
	if err != nil {
		return err
	}
	defer sys.Close()
	if sys.Agents.Get(to) == nil {
		return fmt.Errorf("no agent %q: -to writer or -to researcher", to)
	}
	fmt.Fprintf(w, "library   %s\nregistry  %s/registry/agents\n", sys.Library, sys.URL)
	for _, a := range sys.Agents.List() {
		fmt.Fprintf(w, "agent     %s\n", sys.AgentURL(a.Name))
	}
	payer := sys.wallets.userPayer() // for the researcher, whose skill is priced
	lines := bufio.NewScanner(in)
	var task *a2a.Task
	for {
		fmt.Fprintf(w, "\n> %s: %s\n", to, msg)
		var id a2a.TaskID
		if task != nil {
			id = task.ID
		}
		if _, task, err = Converse(ctx, sys.AgentURL(to), msg, id, payer, w); err != nil {
			return err
		}
		fmt.Fprintf(w, "\n%s's task %s ended %s.\n", to, task.ID, state(task.Status.State))
		if task.Status.Message != nil {
			fmt.Fprintf(w, "\n%s\n", task.Status.Message.Parts[0].Text())
		}
		if task.Status.State != a2a.TaskStateInputRequired {
			break
		}
		fmt.Fprintf(w, "\nyour answer: ")
		if !lines.Scan() || strings.TrimSpace(lines.Text()) == "" {
			fmt.Fprintf(w, "\n(no answer: the task is left waiting)\n")
			break
		}
		msg = lines.Text()
	}
	fmt.Fprintf(w, "\nThe researcher's account holds %s of %s (the writer's %s, yours %s): %d payments settled.\n",
		sys.Facilitator.Balance(Asset, sys.Researcher), Asset.Name, sys.Facilitator.Balance(Asset, sys.Writer),
		sys.Facilitator.Balance(Asset, sys.User), sys.Facilitator.Settled())
	beliefs, err := Remembered(ctx, sys, to)
	if err != nil {
		return err
	}
	if len(beliefs) > 0 {
		fmt.Fprintf(w, "\n%s remembers:\n", to)
	}
	for _, b := range beliefs {
		fmt.Fprintf(w, "  %s: %.60s…\n    from %s %s, rule %s (%s), observation %s, in task %s\n", b.Subject, b.Value,
			b.Provenance.Source.Kind, b.Provenance.Source.Name, b.Provenance.Rule, b.Provenance.Reason,
			strings.Join(b.Provenance.Observations, ", "), b.Provenance.Context.Task)
	}
	return nil
}

// Remembered returns the current beliefs of the agent named name about the anonymous
// principal (whom every caller of this server is: it has no authentication).
func Remembered(ctx context.Context, sys *System, name string) ([]agent.Belief, error) {
	in, err := sys.Agents.Get(name).Host.Instance(ctx, agent.Principal{})
	if err != nil {
		return nil, err
	}
	v, err := in.View(ctx)
	if err != nil {
		return nil, err
	}
	var out []agent.Belief
	for _, b := range v.Beliefs {
		if b.Status == agent.StatusActive {
			out = append(out, b)
		}
	}
	return out, nil
}
