package harness

// Server subprocesses: started with a port flag of 0, they announce "LISTENING <port>" on
// stdout; their stdin is a pipe whose end (or our death) tells them to exit.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StartOptions says how to start a server process.
type StartOptions struct {
	PortFlag  string        // appended with "0" to the arguments: "-port" or "--port"
	Timeout   time.Duration // for the LISTENING line
	StopGrace time.Duration // between SIGTERM and SIGKILL in Stop
	DropEnv   []string      // variables of our environment the process does not get
}

// Process is one running server process.
type Process struct {
	Name string
	Cmd  *exec.Cmd
	PID  int
	Port int // the port it announced

	stdin  io.WriteCloser
	grace  time.Duration
	exited chan struct{}
	once   sync.Once
}

// Start runs argv plus o.PortFlag 0 and waits for its "LISTENING <port>" line. The process's
// stderr, and its stdout other than that line, are copied to our stderr, each line prefixed with
// "[name] ".
func Start(ctx context.Context, name string, argv []string, o StartOptions) (*Process, error) {
	args := append(append([]string(nil), argv[1:]...), o.PortFlag, "0")
	cmd := exec.Command(argv[0], args...)
	cmd.Env = ChildEnv(o.DropEnv...)
	cmd.Stderr = NewPrefixWriter("["+name+"] ", os.Stderr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s server: %w", name, err)
	}
	p := &Process{Name: name, Cmd: cmd, PID: cmd.Process.Pid, stdin: stdin, grace: o.StopGrace, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(p.exited) }()
	portc := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if !sent {
				if s, ok := strings.CutPrefix(line, "LISTENING "); ok {
					if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
						portc <- n
						sent = true
						continue
					}
				}
			}
			fmt.Fprintf(os.Stderr, "[%s] %s\n", name, line)
		}
	}()
	select {
	case p.Port = <-portc:
	case <-p.exited:
		return nil, fmt.Errorf("%s server exited before listening", name)
	case <-time.After(o.Timeout):
		p.Stop()
		return nil, fmt.Errorf("%s server did not print LISTENING within %v", name, o.Timeout)
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
	return p, nil
}

// Alive reports an error if the process has exited.
func (p *Process) Alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s server exited", p.Name)
	default:
		return nil
	}
}

// Stop closes the process's stdin and sends SIGTERM, then kills it after the stop grace. It
// returns when the process has exited; later calls do nothing.
func (p *Process) Stop() {
	p.once.Do(func() {
		p.stdin.Close()
		p.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(p.grace):
			p.Cmd.Process.Kill()
			<-p.exited
		}
	})
}

// StopAll stops the processes concurrently.
func StopAll(ps []*Process) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(p.Stop)
	}
	wg.Wait()
}

// ChildEnv is our environment without the named variables (e.g. "GOMAXPROCS", so that a Go
// server uses the runtime default).
func ChildEnv(drop ...string) []string {
	var env []string
outer:
	for _, kv := range os.Environ() {
		for _, d := range drop {
			if strings.HasPrefix(kv, d+"=") {
				continue outer
			}
		}
		env = append(env, kv)
	}
	return env
}

// PrefixWriter writes each complete line written to it to an underlying writer, prefixed.
type PrefixWriter struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer
	buf    []byte
}

// NewPrefixWriter returns a PrefixWriter writing to w.
func NewPrefixWriter(prefix string, w io.Writer) *PrefixWriter {
	return &PrefixWriter{prefix: prefix, w: w}
}

func (p *PrefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := strings.IndexByte(string(p.buf), '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}
