// Package cdptest drives headless Chromium for tests, through the DevTools protocol over a
// pipe (no port, no WebSocket, no dependency): a [Browser] per test, [Page]s (tabs) that load a
// URL, evaluate JavaScript, click, type, press keys, choose files and take screenshots. Every
// blocking call is bounded: Chromium is killed four minutes after it started, which ends any
// call waiting on it.
//
// Concurrency: a Browser and its Pages belong to the test goroutine that made them; calls are
// not safe for concurrent use.
package cdptest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ChromiumPath is where Debian's chromium package (and `make chromium`) installs Chromium.
const ChromiumPath = "/usr/bin/chromium"

// Need returns path if it exists; otherwise it skips the test, or fails it when CI is set
// (CI installs what the test needs: see .ci/run and the Makefile).
func Need(t testing.TB, path, hint string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("browser test needs %s in CI: %v", path, err)
		}
		t.Skipf("skipping browser test: %s is missing (%s)", path, hint)
	}
	return path
}

// ScreenshotDir is where t saves its screenshots for review: $A2AWEBCAP_SCREENSHOTS when it
// is set (made if missing), else a temporary directory of t's.
func ScreenshotDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("A2AWEBCAP_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Browser is headless Chromium driven through the DevTools protocol over a pipe
// (--remote-debugging-pipe: commands on its fd 3, replies on its fd 4, each message JSON ended
// by a NUL byte). Chromium's --dump-dom cannot be used: its virtual time does not wait for
// WebSocket traffic, so it dumps the page before the stream arrives.
type Browser struct {
	cmd    *exec.Cmd
	w      io.WriteCloser
	r      *bufio.Reader
	stderr string // the file Chromium writes its log to
	next   int
	log    []string // the pages' console messages and uncaught exceptions
	frames []string // the pages' WebSocket frames, sent (→) and received (←), oldest first
}

// Start starts Chromium; it is closed when the test ends, and killed if it runs for
// more than four minutes (so a hung browser fails its test, not the package).
func Start(t testing.TB, chromium string) *Browser {
	t.Helper()
	dir := t.TempDir()
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(dir, "chromium.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	b := &Browser{w: cmdW, r: bufio.NewReader(resR), stderr: stderr.Name()}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	// As root (CI, containers) Chromium runs only without its sandbox. The flags after it keep
	// Chromium off the network: this machine has none but the loopback.
	b.cmd = exec.CommandContext(ctx, chromium,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--remote-debugging-pipe", "about:blank")
	b.cmd.ExtraFiles = []*os.File{cmdR, resW} // fds 3 and 4
	b.cmd.Stderr = stderr
	if err := b.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting %s: %v", chromium, err)
	}
	_ = cmdR.Close()
	_ = resW.Close()
	t.Cleanup(func() {
		// Browser.close ends Chromium cleanly; if it has not ended 10 s later, it is killed.
		_ = b.send("", "Browser.close", nil)
		_ = cmdW.Close()
		timer := time.AfterFunc(10*time.Second, cancel)
		_ = b.cmd.Wait()
		timer.Stop()
		cancel()
		_ = resR.Close()
	})
	return b
}

// chromiumLog returns the end of Chromium's own log, for error messages.
func (b *Browser) chromiumLog() string {
	data, _ := os.ReadFile(b.stderr)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

func (b *Browser) send(session, method string, params any) error {
	b.next++
	msg := map[string]any{"id": b.next, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = b.w.Write(append(data, 0))
	return err
}

// call sends a command and decodes its result into result (nil: ignore it). Events that arrive
// meanwhile are logged when they are the page's console output or exceptions.
func (b *Browser) call(session, method string, params, result any) error {
	if err := b.send(session, method, params); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	id := b.next
	for {
		frame, err := b.r.ReadBytes(0)
		if err != nil {
			return fmt.Errorf("%s: reading Chromium's reply: %w\nChromium's log:\n%s", method, err, b.chromiumLog())
		}
		var msg struct {
			ID     int
			Method string
			Params json.RawMessage
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if err := json.Unmarshal(frame[:len(frame)-1], &msg); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if msg.Method != "" {
			b.event(msg.Method, msg.Params)
			continue
		}
		if msg.ID != id {
			continue
		}
		if msg.Error != nil {
			return fmt.Errorf("%s: %s", method, msg.Error.Message)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(msg.Result, result)
	}
}

func (b *Browser) event(method string, params json.RawMessage) {
	switch method {
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string
			Args []struct {
				Value       any
				Description string
			}
		}
		_ = json.Unmarshal(params, &p)
		var parts []string
		for _, a := range p.Args {
			if a.Description != "" {
				parts = append(parts, a.Description)
			} else {
				parts = append(parts, fmt.Sprint(a.Value))
			}
		}
		b.log = append(b.log, "console."+p.Type+": "+strings.Join(parts, " "))
	case "Runtime.exceptionThrown":
		var p struct {
			ExceptionDetails struct {
				Text      string
				Exception struct{ Description string }
			}
		}
		_ = json.Unmarshal(params, &p)
		b.log = append(b.log, "exception: "+p.ExceptionDetails.Text+" "+p.ExceptionDetails.Exception.Description)
	case "Network.webSocketFrameSent", "Network.webSocketFrameReceived":
		var p struct {
			Timestamp float64
			Response  struct{ PayloadData string }
		}
		_ = json.Unmarshal(params, &p)
		dir := "→"
		if method == "Network.webSocketFrameReceived" {
			dir = "←"
		}
		data := p.Response.PayloadData
		if len(data) > 600 {
			data = data[:600] + "…"
		}
		b.frames = append(b.frames, fmt.Sprintf("%.3f %s %s", p.Timestamp, dir, data))
	case "Network.webSocketClosed":
		b.frames = append(b.frames, "closed")
	}
}

// Page is one tab.
type Page struct {
	b       *Browser
	session string
}

// Open opens url in a new tab.
func (b *Browser) Open(url string) (*Page, error) {
	var target struct{ TargetID string }
	if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var attached struct{ SessionID string }
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return nil, err
	}
	p := &Page{b: b, session: attached.SessionID}
	if err := b.call(p.session, "Runtime.enable", nil, nil); err != nil {
		return nil, err
	}
	if err := b.call(p.session, "Network.enable", nil, nil); err != nil {
		return nil, err
	}
	return p, b.call(p.session, "Page.navigate", map[string]any{"url": url}, nil)
}

// Eval evaluates a JavaScript expression in the page and returns its value as a string.
func (p *Page) Eval(expr string) (string, error) {
	var res struct {
		Result           struct{ Value any }
		ExceptionDetails *struct{ Text string }
	}
	err := p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	if err != nil {
		return "", err
	}
	if res.ExceptionDetails != nil {
		return "", errors.New(res.ExceptionDetails.Text)
	}
	s, _ := res.Result.Value.(string)
	return s, nil
}

// WaitFor polls expr, every 50 ms, until it is the string "true" or ctx ends.
func (p *Page) WaitFor(ctx context.Context, expr string) error {
	for {
		v, err := p.Eval(expr)
		if err == nil && v == "true" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %q, %v)", expr, context.Cause(ctx), v, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Size sets the tab's viewport, in CSS pixels.
func (p *Page) Size(width, height int) error {
	return p.b.call(p.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 760}, nil)
}

// Navigate loads url in the tab.
func (p *Page) Navigate(url string) error {
	return p.b.call(p.session, "Page.navigate", map[string]any{"url": url}, nil)
}

// Reload reloads the tab, as the user's reload button does.
func (p *Page) Reload() error {
	return p.b.call(p.session, "Page.reload", map[string]any{"ignoreCache": true}, nil)
}

// Click clicks the element selector names (the first match), as a user's click does.
func (p *Page) Click(selector string) error {
	v, err := p.Eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return "none"; e.scrollIntoView({block: "center"}); e.click(); return "ok"; })()`, selector))
	if err == nil && v != "ok" {
		err = fmt.Errorf("no element %s to click", selector)
	}
	return err
}

// TypeText focuses the element selector names and types text into it, as a keyboard does
// (Input.insertText: the page sees input events).
func (p *Page) TypeText(selector, text string) error {
	v, err := p.Eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return "none"; e.focus(); return "ok"; })()`, selector))
	if err == nil && v != "ok" {
		err = fmt.Errorf("no element %s to type into", selector)
	}
	if err != nil {
		return err
	}
	return p.b.call(p.session, "Input.insertText", map[string]any{"text": text}, nil)
}

// Press presses and releases a key (e.g. "Enter") on the focused element.
func (p *Page) Press(key string) error {
	codes := map[string]int{"Enter": 13, "Escape": 27}
	for _, typ := range []string{"keyDown", "keyUp"} {
		params := map[string]any{"type": typ, "key": key, "code": key, "windowsVirtualKeyCode": codes[key]}
		if typ == "keyDown" && key == "Enter" {
			params["text"] = "\r"
		}
		if err := p.b.call(p.session, "Input.dispatchKeyEvent", params, nil); err != nil {
			return err
		}
	}
	return nil
}

// Screenshot writes a PNG of the tab to path.
func (p *Page) Screenshot(path string) error {
	var res struct{ Data []byte }
	if err := p.b.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &res); err != nil {
		return err
	}
	return os.WriteFile(path, res.Data, 0o644)
}

// Await evaluates a JavaScript expression whose value is a promise and returns what it
// resolves to, as a string.
func (p *Page) Await(expr string) (string, error) {
	var res struct {
		Result           struct{ Value any }
		ExceptionDetails *struct {
			Text      string
			Exception struct{ Description string }
		}
	}
	err := p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res)
	if err != nil {
		return "", err
	}
	if res.ExceptionDetails != nil {
		return "", fmt.Errorf("%s %s", res.ExceptionDetails.Text, res.ExceptionDetails.Exception.Description)
	}
	s, _ := res.Result.Value.(string)
	return s, nil
}

// SetFiles sets the files of the file input selector names, as a user choosing them does.
func (p *Page) SetFiles(selector string, paths ...string) error {
	var doc struct{ Root struct{ NodeID int } }
	if err := p.b.call(p.session, "DOM.getDocument", nil, &doc); err != nil {
		return err
	}
	var node struct{ NodeID int }
	if err := p.b.call(p.session, "DOM.querySelector", map[string]any{"nodeId": doc.Root.NodeID, "selector": selector}, &node); err != nil {
		return err
	}
	return p.b.call(p.session, "DOM.setFileInputFiles", map[string]any{"nodeId": node.NodeID, "files": paths}, nil)
}

// Log returns what the browser's pages logged so far: their console messages and uncaught
// exceptions, one a line.
func (b *Browser) Log() []string { return b.log }

// Log returns what the browser's pages logged so far (see [Browser.Log]).
func (p *Page) Log() []string { return p.b.log }

// Frames returns the WebSocket frames the browser's pages sent ("→") and received ("←") so
// far, oldest first, each with its time in seconds and its payload (cut at 600 bytes), one an
// entry; "closed" marks a WebSocket closing. Frames are read while a call waits for Chromium,
// so the last ones may be missing until the next call.
func (b *Browser) Frames() []string { return b.frames }

// Frames returns the browser's WebSocket frames so far (see [Browser.Frames]).
func (p *Page) Frames() []string { return p.b.frames }
