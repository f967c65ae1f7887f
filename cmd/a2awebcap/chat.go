package main

// The chat verb: a conversation with an agent on one A2A context, a line of input per message.
//
// Concurrency: a goroutine reads standard input into a channel, so that Ctrl-C ends the chat
// at the prompt as well as during a reply. It is not waited for: a read from standard input
// cannot be interrupted, and the process ends with the chat.

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// maxChatLine bounds a line of chat input.
const maxChatLine = 1 << 20

// runChat reads lines from io.in and sends each as a streaming message in one context
// (contextID, or the one the agent opens for the first message), printing the reply as it
// comes. A task that asks for input is answered by the next line, on the same task. Ctrl-C
// cancels the running task and ends the chat (errInterrupted); end of input ends it (nil).
func runChat(ctx context.Context, c agentAPI, url, contextID string, vf *verbFlags, io stdio, first *renderer) error {
	lines := make(chan string)
	readErr := make(chan error, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(io.in)
		sc.Buffer(make([]byte, 0, 4096), maxChatLine)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		readErr <- sc.Err()
	}()
	say := func(format string, args ...any) {
		if !vf.quiet {
			fmt.Fprintf(io.err, format, args...)
		}
	}
	say("Talking to %s: each line is a message. Ctrl-D ends; Ctrl-C cancels the reply and ends.\n", url)
	var waiting a2a.TaskID // a task that asked for input: the next line answers it
	for {
		if waiting != "" {
			say("answer> ")
		} else {
			say("> ")
		}
		var line string
		select {
		case <-ctx.Done():
			say("\n")
			return context.Cause(ctx)
		case l, ok := <-lines:
			if !ok {
				say("\n")
				if contextID != "" {
					say("resume this conversation with: a2awebcap chat -context %s %s\n", contextID, url)
				}
				select {
				case err := <-readErr:
					return err
				default:
					return nil
				}
			}
			line = strings.TrimSpace(l)
		}
		switch line {
		case "":
			continue
		case "/quit", "/exit":
			return nil
		}
		msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(line))
		msg.ContextID, msg.TaskID = contextID, waiting
		out := newRenderer(io.out, io.err, vf, first.save)
		err := out.stream(c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg, Tenant: vf.tenant}))
		if out.contextID != "" {
			contextID = out.contextID
		}
		if context.Cause(ctx) == errInterrupted {
			if out.task != "" && (out.state == "" || !out.state.Terminal()) {
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				_, cerr := c.CancelTask(cctx, &a2a.CancelTaskRequest{ID: out.task, Tenant: vf.tenant})
				cancel()
				if cerr != nil {
					fmt.Fprintf(io.err, "could not cancel task %s: %v\n", out.task, verbError(cerr))
				} else {
					say("canceled task %s\n", out.task)
				}
			}
			return errInterrupted
		}
		waiting = ""
		if err != nil {
			fmt.Fprintln(io.err, "error:", verbError(err))
			continue
		}
		switch out.state {
		case a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
			waiting = out.task
		case a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected:
			say("(the task is %s)\n", stateName(out.state))
		}
	}
}
