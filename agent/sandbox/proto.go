package sandbox

// The protocol between a pool and its workers: frames on the worker's stdin and stdout, each a
// 4-byte big-endian length and a JSON object, at most maxFrame bytes. The pool sends "init" once
// (the worker answers "ready"), then "run"; during a run the worker sends "call" for each
// capability call its program makes and waits for the pool's "return"; a run ends with the
// worker's "done". While the pool waits for the user before answering a call, it sends "pause"
// and then "resume" (or the "return"): the worker's clock stops between them. A worker serves
// one run at a time.

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// maxFrame bounds one frame, either way.
const maxFrame = 8 << 20

type frame struct {
	Op string `json:"op"`

	// init
	Memory int64 `json:"memory,omitempty"`

	// run
	Job *wireJob `json:"job,omitempty"`

	// call (worker to pool) and return (pool to worker)
	Module string          `json:"module,omitempty"`
	Method string          `json:"method,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	Value  json.RawMessage `json:"value,omitempty"`
	Error  *wireError      `json:"error,omitempty"`

	// done
	Output string       `json:"output,omitempty"`
	Steps  uint64       `json:"steps,omitempty"`
	Tests  []TestResult `json:"tests,omitempty"`
}

// wireJob is a Job as a worker receives it.
type wireJob struct {
	Files    map[string]string   `json:"files"`
	Main     string              `json:"main"`
	Function string              `json:"function,omitempty"`
	Args     json.RawMessage     `json:"args,omitempty"`
	Tests    bool                `json:"tests,omitempty"`
	Modules  map[string][]string `json:"modules,omitempty"`
	Steps    uint64              `json:"steps"`
	Time     time.Duration       `json:"time"`
	CPU      time.Duration       `json:"cpu"`
	Output   int                 `json:"output"`
}

type wireError struct {
	Kind      string `json:"kind"`
	Message   string `json:"message"`
	Backtrace string `json:"backtrace,omitempty"`
}

func (w *wireError) err() *Error {
	kind, ok := kinds[w.Kind]
	if !ok {
		kind = ErrFailed
	}
	return &Error{Kind: kind, Message: w.Message, Backtrace: w.Backtrace}
}

func wireErr(kind, format string, args ...any) *wireError {
	return &wireError{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

var errFrameTooLarge = errors.New("sandbox: frame too large")

func writeFrame(w *bufio.Writer, f *frame) error {
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if len(data) > maxFrame {
		return errFrameTooLarge
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	return w.Flush()
}

func readFrame(r *bufio.Reader) (*frame, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxFrame {
		return nil, errFrameTooLarge
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	var f frame
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("sandbox: malformed frame: %w", err)
	}
	return &f, nil
}
