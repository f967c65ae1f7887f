package main

// What the client verbs share: exit codes, the command line's words, and errors for people or
// scripts.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Exit codes of the client verbs: the help lists them (exitCodesUsage).
const (
	exitOK            = 0   // done: the task completed, the agent answered, the call succeeded
	exitError         = 1   // the call failed: the agent could not be reached, or refused it
	exitUsage         = 2   // the command line is wrong
	exitFailed        = 3   // the task failed
	exitCanceled      = 4   // the task was canceled
	exitRejected      = 5   // the agent rejected the task
	exitInputRequired = 6   // the task waits for your answer (a hint says how to give it)
	exitAuthRequired  = 7   // the task waits for authorization
	exitInterrupted   = 130 // Ctrl-C (or SIGTERM): stopped watching, or canceled in chat
)

const exitCodesUsage = `Exit codes: 0 completed (or answered); 1 the call failed; 2 usage error; 3 the task failed;
4 canceled; 5 rejected; 6 input required (the hint says how to answer); 7 auth required;
130 interrupted (Ctrl-C: the task goes on, and the hint says how to resume).
`

// usageError is a wrong command line: exit code 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// stateExit is a task that ended in a state other than completed: its exit code, and no message
// (the output said what happened).
type stateExit struct {
	state a2a.TaskState
	code  int
}

func (e stateExit) Error() string { return "the task is " + stateName(e.state) }

// errInterrupted is the cause of a verb's context when the user pressed Ctrl-C.
var errInterrupted = errors.New("interrupted")

// reported is an error the verb already printed (as JSON, under -o json).
type reported struct{ error }

func (e reported) Unwrap() error { return e.error }

// stateCode is the exit code for a task that stopped in state s.
func stateCode(s a2a.TaskState) int {
	switch s {
	case a2a.TaskStateFailed:
		return exitFailed
	case a2a.TaskStateCanceled:
		return exitCanceled
	case a2a.TaskStateRejected:
		return exitRejected
	case a2a.TaskStateInputRequired:
		return exitInputRequired
	case a2a.TaskStateAuthRequired:
		return exitAuthRequired
	}
	return exitOK
}

// exitCode is the process's exit code for what a verb returned.
func exitCode(err error) int {
	var se stateExit
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &se):
		return se.code
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitError
}

// clientMain runs a client verb as the process: the context ends on Ctrl-C or SIGTERM (with
// errInterrupted as its cause); errors are printed, and the exit code returned.
func clientMain(verb string, args []string) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		if _, ok := <-sig; ok {
			cancel(errInterrupted)
			signal.Stop(sig) // a second Ctrl-C kills the process
		}
	}()
	defer signal.Stop(sig)
	err := runVerb(ctx, verb, args, stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr})
	var se stateExit
	var r reported
	if err != nil && !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errInterrupted) && !errors.As(err, &se) && !errors.As(err, &r) {
		fmt.Fprintln(os.Stderr, "a2awebcap:", verbError(err))
	}
	return exitCode(err)
}

// stdio is where a verb reads and writes.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// errorJSON is an error as -o json prints it, on standard output: {"error": {…}}.
type errorJSON struct {
	Error struct {
		Message string `json:"message"`
		// Reason is the A2A error reason (TASK_NOT_FOUND, UNAUTHENTICATED, …), when the agent
		// answered with an A2A error.
		Reason string `json:"reason,omitempty"`
		// ExitCode is the process's exit code.
		ExitCode int `json:"exitCode"`
	} `json:"error"`
}

// reportJSON prints err as JSON on w and returns it marked as reported.
func reportJSON(w io.Writer, err error) error {
	var e errorJSON
	e.Error.Message = err.Error()
	e.Error.Reason = a2aReason(err)
	e.Error.ExitCode = exitCode(err)
	b, merr := json.Marshal(e)
	if merr != nil {
		return err
	}
	fmt.Fprintf(w, "%s\n", b)
	return reported{err}
}

// a2aReason is the A2A reason of err, or "" for an error that is not an A2A error.
func a2aReason(err error) string {
	if reason := a2a.ErrorReason(err); reason != "INTERNAL_ERROR" || errors.Is(err, a2a.ErrInternalError) {
		return reason
	}
	return ""
}

// verbError decorates an A2A error with its reason, for the user.
func verbError(err error) error {
	if reason := a2aReason(err); reason != "" {
		return fmt.Errorf("%w [%s]", err, reason)
	}
	return err
}

// negativeNumber is a message word that looks like a flag but is a number: "-5", "-0.5".
var negativeNumber = regexp.MustCompile(`^-[0-9]`)

// parseInterleaved parses flags that may come before, between or after the positional
// arguments, as users type them. Everything after "--" is positional. Once textFrom positional
// arguments are there (the URL, say), what follows is message text: a word such as "-5" that
// is no flag is text, not an error. textFrom < 0: no message text. Errors are usageErrors,
// printed with the usage; -h prints the usage and returns flag.ErrHelp.
func parseInterleaved(fs *flag.FlagSet, args []string, textFrom ...int) ([]string, error) {
	from := -1
	if len(textFrom) > 0 {
		from = textFrom[0]
	}
	fail := func(err error) ([]string, error) {
		fmt.Fprintln(fs.Output(), err)
		fs.Usage()
		return nil, usageError{err}
	}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(pos, args[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		f := fs.Lookup(name)
		switch {
		case f == nil && (name == "h" || name == "help"):
			fs.Usage()
			return nil, flag.ErrHelp
		case f == nil && from >= 0 && len(pos) >= from && negativeNumber.MatchString(a):
			pos = append(pos, a)
			continue
		case f == nil:
			hint := ""
			if from >= 0 {
				hint = " (put -- before message words that start with a dash)"
			}
			return fail(fmt.Errorf("flag provided but not defined: %s%s", a, hint))
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if !hasValue {
				value = "true"
			}
		} else if !hasValue {
			if i+1 >= len(args) {
				return fail(fmt.Errorf("flag needs an argument: %s", a))
			}
			i++
			value = args[i]
		}
		if err := fs.Set(name, value); err != nil {
			return fail(fmt.Errorf("invalid value %q for flag -%s: %v", value, name, err))
		}
	}
	return pos, nil
}
