package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeCommands returns the commands of the README's sh blocks that start with prefix, without
// their trailing comments.
func readmeCommands(t *testing.T, prefix string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	comment := regexp.MustCompile(`\s{2,}#.*$`)
	var cmds []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "```"):
			in = line == "```sh"
		case in && strings.HasPrefix(line, prefix):
			cmds = append(cmds, strings.TrimSpace(comment.ReplaceAllString(line, "")))
		}
	}
	return cmds
}

// The README says how to install the command, and its client examples work with the command
// that install gives, against the server its first command starts, run from a fresh directory
// on a fresh machine (an empty home).
func TestReadmeExamples(t *testing.T) {
	installs := readmeCommands(t, "go install ")
	for _, want := range []string{"go install github.com/a2awebcap/a2awebcap/cmd/a2awebcap@latest", "go install ./cmd/a2awebcap"} {
		found := false
		for _, c := range installs {
			found = found || c == want
		}
		if !found {
			t.Errorf("the README does not say %q (it says %q)", want, installs)
		}
	}
	first := readmeCommands(t, "go run ")
	if len(first) == 0 || first[0] != "go run ./cmd/a2awebcap serve" {
		t.Fatalf("the README's first command is %q, want go run ./cmd/a2awebcap serve", first)
	}
	bin := installBinary(t) // what "go install ./cmd/a2awebcap" gives
	dir := t.TempDir()
	base, serveLog := serveProcess(t, bin, dir) // the first command's flags: none
	// It says where the web app is (the README's comment), and keeps its data in the home's
	// data directory, not in the working directory.
	if !strings.Contains(serveLog(), "web app     "+base+"/web/\n") {
		t.Errorf("serve's banner does not give the web app's URL:\n%s", serveLog())
	}
	if _, err := os.Stat(filepath.Join(dir, "home", ".local", "share", "a2awebcap", "a2awebcap.db")); err != nil {
		t.Errorf("serve's store is not in ~/.local/share/a2awebcap: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a2awebcap.db")); err == nil {
		t.Errorf("serve wrote a2awebcap.db into its working directory")
	}
	examples := readmeCommands(t, "a2awebcap ")
	if len(examples) < 3 {
		t.Fatalf("the README has %d client examples", len(examples))
	}
	for _, ex := range examples {
		if strings.ContainsAny(ex, `"'$|<>;&`) {
			t.Errorf("example %q needs a shell to run: keep the examples plain words", ex)
			continue
		}
		args := strings.Fields(strings.ReplaceAll(ex, "http://127.0.0.1:8080", base))[1:]
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+filepath.Join(dir, "home"))
		if args[0] == "chat" {
			cmd.Stdin = strings.NewReader("echo hello from chat\n")
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) || err != nil || stdout.Len() == 0 {
			t.Errorf("README example %q: %v\nstdout: %s\nstderr: %s\nserve: %s", ex, err, stdout.String(), stderr.String(), serveLog())
			continue
		}
		for said, want := range map[string]string{"chat": "hello from chat", "the sky is blue": "Noted: the sky is blue.", "know": "blue", "-5": "Noted: the low is -5 degrees."} {
			if strings.Contains(ex, " "+said) && !strings.Contains(stdout.String(), want) {
				t.Errorf("README example %q printed %q, want %q in it", ex, stdout.String(), want)
			}
		}
	}
}
