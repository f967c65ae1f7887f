package capnweb_test

// Fuzz targets, seeded with every frame of the golden transcripts (testdata/golden):
//
//	go test -run='^$' -fuzz='^FuzzDecode$' -fuzztime=2m ./capnweb
//	go test -run='^$' -fuzz='^FuzzSession$' -fuzztime=2m ./capnweb
//
// Neither may panic, hang, or leak goroutines; errors (aborts) are fine.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/capnwebtest"
	"github.com/a2awebcap/a2awebcap/internal/jsonstr"
)

const (
	// fuzzTimeout bounds one input: a session that has not ended by then is hung.
	fuzzTimeout = 20 * time.Second
	// fuzzMaxFrames bounds the frames FuzzSession sends for one input.
	fuzzMaxFrames = 256
	// fuzzGoroutineSlack is how many more goroutines than before an input may remain after it.
	fuzzGoroutineSlack = 4
)

// handSeeds are frames the transcripts do not show.
//
// testdata/fuzz/FuzzSession holds inputs that broke a session, run with the seeds:
//
//   - remap-callback-deadlock: a mapper on the main object calls the client's callback with
//     the (settled) map input; encoding that call's arguments exports a promise, whose
//     resolution is sent while the call's own message is still being encoded (sendMu is held):
//     the session deadlocks and Close never returns.
//   - request-init-infinity: a number that overflows to +Inf (as JSON.parse reads it) in a
//     Request's init, echoed back: the init is written with the raw JSON writer, as "+Inf".
//
// testdata/fuzz/FuzzDecode/number-overflow-reencoded: the same writer on a parsed tree (the way
// received map instructions are forwarded).
var handSeeds = []string{
	`["push",["remap",0,["listIds"],[],[["pipeline",0]]]]`,
	`["pipe"]`,
	`["stream",["pipeline",1,["abort"],[["error","Error","stop"]]]]`,
	`["push",["pipeline",0,["sumStream"],[["readable",1]]]]`,
	`["push",["blob","text/plain",["readable",1]]]`,
	`["push",["pipeline",0,["echo"],[["promise",-1]]]]`,
	`["resolve",-1,["export",-2]]`,
	`["reject",-1,["error","TypeError","no",null,{"cause":["error","Error","why"]}]]`,
	`["push",["pipeline",0,["delay"],[1e9]]]`,
	`["push",["pipeline",0,["echo"],[["bigint","` + strings.Repeat("9", 20000) + `"]]]]`,
	`["push",["pipeline",0,["echo"],[` + strings.Repeat("[[", 300) + `1` + strings.Repeat("]]", 300) + `]]]`,
	`["push",["pipeline",0,["echo"],[{"a":1,"a":2}]]]`,
	`["push",["pipeline",0,["echo"],["\ud800"]]]`,
	`["release",0,1]`,
	`["pull",0]`,
	`["abort",["error","Error","bye"]]`,
}

// goldenFrames returns every frame of the JS transcripts, and each transcript's client side
// (its frames joined by newlines) or batch request body.
func goldenFrames(f *testing.F) (frames, scripts []string) {
	f.Helper()
	for _, file := range goldenFiles(f, "*.jsonl") {
		var script []string
		for _, e := range loadGolden(f, file) {
			if e.Dir != "c2s" && e.Dir != "s2c" {
				continue
			}
			if strings.HasPrefix(e.Data, "<binary") {
				continue
			}
			if e.Raw {
				var body string
				if err := json.Unmarshal([]byte(e.Data), &body); err != nil {
					f.Fatalf("%s: bad raw body %q: %v", file, e.Data, err)
				}
				if e.Dir == "c2s" {
					scripts = append(scripts, body)
				}
				continue
			}
			frames = append(frames, e.Data)
			if e.Dir == "c2s" && !strings.HasPrefix(transcriptName(file), "batch-") {
				script = append(script, e.Data)
			}
		}
		if len(script) > 0 {
			scripts = append(scripts, strings.Join(script, "\n"))
		}
	}
	return frames, scripts
}

// waitGoroutines waits until at most n goroutines run, or, failing that, until no more than
// fuzzGoroutineSlack run capnweb code, and returns the count it last saw. The fuzzing engine
// starts and ends goroutines of its own meanwhile: only those with capnweb frames can leak.
func waitGoroutines(n int) (int, bool) {
	var got int
	ok := goldenWaitFor(2*time.Second, func() bool {
		if got = runtime.NumGoroutine(); got <= n {
			return true
		}
		got = capnwebGoroutines()
		return got <= fuzzGoroutineSlack
	})
	return got, ok
}

// capnwebGoroutines counts the goroutines with a frame in package capnweb (not its tests).
func capnwebGoroutines() int {
	n := 0
	for _, g := range strings.Split(stacks(), "\n\n") {
		if strings.Contains(g, "a2awebcap/capnweb.") {
			n++
		}
	}
	return n
}

func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// FuzzDecode parses arbitrary bytes as JSON and evaluates them in a session: as a bare
// expression and as a message. It also checks the JSON codec: what parseJSON accepts is valid
// JSON that encoding/json reads the same, and survives re-encoding; what it refuses that
// encoding/json accepts is refused for a duplicate key or depth; strings and numbers the writer
// prints read back as themselves.
func FuzzDecode(f *testing.F) {
	frames, scripts := goldenFrames(f)
	for _, s := range append(append(frames, scripts...), handSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkJSONReader(t, data)
		checkJSONWriter(t, data)

		base := runtime.NumGoroutine()
		done := make(chan struct{})
		go func() {
			defer close(done)
			capnweb.DecodeForTest(data, &capnwebtest.API{})
		}()
		select {
		case <-done:
		case <-time.After(fuzzTimeout):
			t.Fatalf("decoding %q did not finish in %v; goroutines:\n%s", data, fuzzTimeout, stacks())
		}
		if n, ok := waitGoroutines(base + fuzzGoroutineSlack); !ok {
			t.Fatalf("decoding %q left %d goroutines running (%d before); goroutines:\n%s", data, n, base, stacks())
		}
	})
}

func checkJSONReader(t *testing.T, data []byte) {
	const depth = 64
	v, err := capnweb.ParseJSONForTest(data, depth)
	var std any
	stdErr := json.Unmarshal(data, &std)
	if err != nil {
		if json.Valid(data) && !strings.Contains(err.Error(), "duplicate object key") && !strings.Contains(err.Error(), "depth") {
			t.Fatalf("parseJSON(%q) error = %v, but it is valid JSON without duplicate keys or excessive depth", data, err)
		}
		return
	}
	if !json.Valid(data) {
		t.Fatalf("parseJSON(%q) = %#v, want an error: encoding/json says it is not valid JSON", data, v)
	}
	if stdErr == nil && !reflect.DeepEqual(stdStrings(v), std) {
		t.Fatalf("parseJSON(%q) = %#v, encoding/json reads %#v", data, v, std)
	}
	enc, err := capnweb.EncodeJSONForTest(v)
	if err != nil {
		return // deeper than the encoder goes
	}
	back, err := capnweb.ParseJSONForTest(enc, depth)
	if err != nil || !reflect.DeepEqual(finite(v), back) {
		t.Fatalf("parseJSON(%q) = %#v, written as %s, which reads back as %#v, %v", data, v, enc, back, err)
	}
}

// stdString is s as encoding/json would have read it: lone surrogates, which our reader keeps
// (as WTF-8), are U+FFFD.
func stdString(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if _, ok := jsonstr.Surrogate(s[i:]); ok {
			b.WriteRune(utf8.RuneError)
			i += 3
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// stdStrings is v as encoding/json reads it: its strings, keys included, as stdString has them,
// its objects maps.
func stdStrings(v any) any {
	switch x := v.(type) {
	case string:
		return stdString(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stdStrings(e)
		}
		return out
	case capnweb.Object: // encoding/json reads a map (the round trip below checks the order)
		out := make(map[string]any, len(x))
		for _, p := range x {
			out[stdString(p.Key)] = stdStrings(p.Value)
		}
		return out
	}
	return v
}

// finite is v with out-of-range numbers (read as ±Inf, as JSON.parse does) replaced by nil: the
// writer prints them as null, as JSON.stringify does.
func finite(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil
		}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = finite(e)
		}
		return out
	case capnweb.Object:
		out := make(capnweb.Object, len(x))
		for i, p := range x {
			out[i] = capnweb.Prop{Key: p.Key, Value: finite(p.Value)}
		}
		return out
	}
	return v
}

func checkJSONWriter(t *testing.T, data []byte) {
	s := string(data)
	enc := capnweb.AppendJSONStringForTest(nil, s)
	// Invalid UTF-8 bytes become U+FFFD, but for lone surrogates (as WTF-8), which are kept,
	// and halves of a pair, which make the pair's character (jsonstr's tests hold these).
	want, _ := jsonstr.UnescapeWTF8(enc[1 : len(enc)-1])
	got, err := capnweb.ParseJSONForTest(enc, 1)
	if err != nil || got != string(want) {
		t.Fatalf("appendJSONString(%q) = %s, which reads back as %q, %v; want %q", s, enc, got, err, want)
	}
	var std string
	if err := json.Unmarshal(enc, &std); err != nil || std != stdString(string(want)) {
		t.Fatalf("appendJSONString(%q) = %s, which encoding/json reads as %q, %v; want %q", s, enc, std, err, stdString(string(want)))
	}

	if len(data) < 8 {
		return
	}
	fl := math.Float64frombits(binary.LittleEndian.Uint64(data))
	if math.IsNaN(fl) || math.IsInf(fl, 0) {
		return
	}
	num := capnweb.AppendJSONNumberForTest(nil, fl)
	if back, err := strconv.ParseFloat(string(num), 64); err != nil || back != fl {
		t.Fatalf("appendJSONNumber(%v) = %s, which reads back as %v, %v", fl, num, back, err)
	}
	// encoding/json prints finite floats as JavaScript's JSON.stringify does, except -0, which
	// JSON.stringify prints as 0.
	es, _ := json.Marshal(fl)
	if fl == 0 {
		es = []byte("0")
	}
	if string(es) != string(num) {
		t.Fatalf("appendJSONNumber(%v) = %s, want %s (as JSON.stringify)", fl, num, es)
	}
}

// fuzzAPI is the golden test API plus a sentinel method: FuzzSession streams a call to it
// last, so that when its answer arrives, the session has handled every frame of the input and
// sent what those produced at once.
type fuzzAPI struct {
	*capnwebtest.API
}

func (fuzzAPI) FuzzSentinel(token string) string { return token }

// FuzzSession feeds the input, split into frames at newlines (empty ones skipped), to a Session
// over Pipe that offers the golden test API, then closes the session. The session must handle
// every frame (or abort), send only valid JSON, close without hanging, and leave no goroutines
// behind.
func FuzzSession(f *testing.F) {
	frames, scripts := goldenFrames(f)
	for _, s := range scripts {
		f.Add([]byte(s))
	}
	for _, s := range append(frames, handSeeds...) {
		f.Add([]byte(s))
	}
	f.Add([]byte(strings.Join(handSeeds, "\n")))
	f.Fuzz(runSessionInput)
}

var sentinelToken = func() string {
	nonce := make([]byte, 8)
	rand.Read(nonce)
	return hex.EncodeToString(nonce)
}()

// runSessionInput is the body of FuzzSession.
func runSessionInput(t *testing.T, data []byte) {
	// Empty lines are skipped: an empty frame is not JSON and would end the session there.
	msgs := bytes.FieldsFunc(data, func(r rune) bool { return r == '\n' })
	if len(msgs) > fuzzMaxFrames {
		msgs = msgs[:fuzzMaxFrames]
	}
	base := runtime.NumGoroutine()
	done := make(chan struct{})
	var stalled bool
	var badFrame []byte // a server frame that is not JSON
	go func() {
		defer close(done)
		ctx := context.Background()
		client, server := capnweb.Pipe()
		api := &fuzzAPI{API: &capnwebtest.API{}}
		s := capnweb.NewSession(server, api, nil)
		drained := make(chan struct{})
		answered := make(chan struct{})
		go func() {
			defer close(drained)
			seen := false
			for {
				m, err := client.Receive(ctx)
				if err != nil {
					return
				}
				if !json.Valid(m) && badFrame == nil {
					badFrame = m
				}
				if !seen && bytes.Contains(m, []byte(sentinelToken)) {
					seen = true
					close(answered)
				}
			}
		}()
		for _, m := range msgs {
			if client.Send(ctx, m) != nil {
				break
			}
		}
		// A stream call is answered without a pull: its ID need not be known.
		client.Send(ctx, []byte(`["stream",["pipeline",0,["fuzzSentinel"],["`+sentinelToken+`"]]]`))
		select {
		case <-answered:
		case <-s.Done():
		case <-time.After(fuzzTimeout / 2):
			stalled = true
		}
		s.Close()
		api.Wait()
		<-drained
	}()
	select {
	case <-done:
	case <-time.After(fuzzTimeout):
		t.Fatalf("session on %q did not close in %v; goroutines:\n%s", data, fuzzTimeout, stacks())
	}
	if badFrame != nil {
		t.Fatalf("session on %q sent a frame that is not JSON: %s", data, badFrame)
	}
	if stalled {
		t.Fatalf("session on %q neither handled every frame nor ended in %v", data, fuzzTimeout/2)
	}
	if n, ok := waitGoroutines(base + fuzzGoroutineSlack); !ok {
		t.Fatalf("session on %q left %d goroutines running (%d before); goroutines:\n%s", data, n, base, stacks())
	}
}
