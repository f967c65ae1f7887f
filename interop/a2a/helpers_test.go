package a2ainterop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// needNode returns the node binary; it skips (or, with CI set, fails) when
// Node or the pinned npm package pkg is missing.
func needNode(t *testing.T, pkg string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		if _, err = os.Stat(filepath.Join("..", "node_modules", pkg, "package.json")); err != nil {
			err = fmt.Errorf("interop/node_modules/%s is missing: run `cd interop && npm ci` (make npm)", pkg)
		}
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("interop test needs Node and %s in CI: %v", pkg, err)
		}
		t.Skipf("skipping interop test: %v", err)
	}
	return node
}

// stepLine is one line a script prints per step.
type stepLine struct {
	Step  string `json:"step"`
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

// runSteps runs `node script args...`, logs its output, and checks that it ran
// wantSteps in that order, all passing, and printed its summary line. It
// returns the output's lines.
func runSteps(t *testing.T, node string, wantSteps []string, script string, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, append([]string{script}, args...)...).CombinedOutput()
	t.Logf("node %s %s:\n%s", script, strings.Join(args, " "), out)

	lines := strings.Split(string(out), "\n")
	var got []string
	for _, line := range lines {
		var s stepLine
		if json.Unmarshal([]byte(line), &s) != nil || s.Step == "" {
			continue
		}
		if !s.OK {
			t.Errorf("%s %s: %s", script, s.Step, s.Error)
		}
		got = append(got, s.Step)
	}
	if err != nil {
		t.Errorf("node exited: %v", err)
	}
	if strings.Join(got, ",") != strings.Join(wantSteps, ",") {
		t.Errorf("steps run: %v, want %v", got, wantSteps)
	}
	if !strings.Contains(string(out), fmt.Sprintf("%d passed, 0 failed", len(wantSteps))) {
		t.Errorf("summary line missing or reports failures")
	}
	return lines
}
