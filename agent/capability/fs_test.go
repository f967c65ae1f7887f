package capability

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fsSet makes a directory tree — root/notes/a.txt, root/secret/key, and outside/ beside root
// — and a set holding a file system on root under contract, pre-approved.
func fsSet(t *testing.T, contract Contract) (s *Set, root, outside string) {
	t.Helper()
	dir := t.TempDir()
	root, outside = filepath.Join(dir, "root"), filepath.Join(dir, "outside")
	for _, d := range []string{filepath.Join(root, "notes"), filepath.Join(root, "secret"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, data := range map[string]string{filepath.Join(root, "notes", "a.txt"): "alpha", filepath.Join(root, "secret", "key"): "hunter2",
		filepath.Join(outside, "passwd"): "root:x:0:0"} {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := FileSystem(root, contract, nil)
	if err != nil {
		t.Fatal(err)
	}
	s = NewSet(&SetOptions{Principal: "alice"})
	t.Cleanup(func() { s.Close(); c.Revoke(nil) })
	if err := s.Install(t.Context(), c, Grant{Strategy: Strategy{Kind: PreApproved}}); err != nil {
		t.Fatal(err)
	}
	return s, root, outside
}

func fsCall(t *testing.T, s *Set, method string, args any) (map[string]any, error) {
	t.Helper()
	raw, _ := json.Marshal(args)
	out, err := s.Call(t.Context(), Request{Capability: "fs", Method: method, Args: raw})
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m, nil
}

func TestFileSystem(t *testing.T) {
	t.Parallel()
	s, root, _ := fsSet(t, Contract{Reads: []string{"file:*"}, Writes: []string{"file:notes/*"}})
	got, err := fsCall(t, s, "read", map[string]any{"path": "notes/a.txt"})
	if err != nil || got["content"] != "alpha" || got["encoding"] != "utf-8" || got["truncated"] != false {
		t.Fatalf("read = %v, %v", got, err)
	}
	if got, err = fsCall(t, s, "write", map[string]any{"path": "notes/2026/b.txt", "content": "beta"}); err != nil || got["bytes"] != 4.0 {
		t.Fatalf("write = %v, %v", got, err)
	}
	if got, err = fsCall(t, s, "write", map[string]any{"path": "notes/2026/b.txt", "content": "!", "append": true}); err != nil {
		t.Fatalf("append = %v, %v", got, err)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "notes", "2026", "b.txt")); string(data) != "beta!" {
		t.Errorf("the file holds %q", data)
	}
	if got, err = fsCall(t, s, "write", map[string]any{"path": "notes/bin", "content": "/wA=", "encoding": "base64"}); err != nil {
		t.Fatal(err)
	}
	if got, err = fsCall(t, s, "read", map[string]any{"path": "notes/bin"}); err != nil || got["content"] != "/wA=" || got["encoding"] != "base64" {
		t.Errorf("read binary = %v, %v", got, err)
	}
	if got, err = fsCall(t, s, "read", map[string]any{"path": "notes/a.txt", "offset": 1, "length": 3}); err != nil ||
		got["content"] != "lph" || got["truncated"] != true || got["size"] != 5.0 {
		t.Errorf("read a range = %v, %v", got, err)
	}
	got, err = fsCall(t, s, "list", map[string]any{"path": "notes"})
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := json.Marshal(got["entries"])
	if want := `[{"dir":true,"name":"2026","size":0},{"dir":false,"name":"a.txt","size":5},{"dir":false,"name":"bin","size":2}]`; string(ents) != want {
		t.Errorf("list = %s, want %s", ents, want)
	}
	if got, err = fsCall(t, s, "stat", map[string]any{"path": "notes/none"}); err != nil || got["exists"] != false {
		t.Errorf("stat of nothing = %v, %v", got, err)
	}
	if got, err = fsCall(t, s, "stat", map[string]any{"path": "./notes/../notes/a.txt"}); err != nil || got["exists"] != true || got["path"] != "notes/a.txt" {
		t.Errorf("stat = %v, %v", got, err)
	}
	if _, err = fsCall(t, s, "mkdir", map[string]any{"path": "notes/x/y"}); err != nil {
		t.Fatal(err)
	}
	if _, err = fsCall(t, s, "remove", map[string]any{"path": "notes/x/y"}); err != nil {
		t.Fatal(err)
	}
	if _, err = fsCall(t, s, "remove", map[string]any{"path": "notes/x/y"}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("removing it again = %v", err)
	}
	if _, err = fsCall(t, s, "read", map[string]any{"path": "notes"}); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("reading a directory = %v", err)
	}
	// The contract: writes only under notes/.
	for _, c := range []struct {
		method string
		args   map[string]any
	}{
		{"write", map[string]any{"path": "secret/key", "content": "x"}},
		{"remove", map[string]any{"path": "secret/key"}},
		{"mkdir", map[string]any{"path": "other"}},
		{"write", map[string]any{"path": "notes.txt", "content": "x"}},
	} {
		if _, err := fsCall(t, s, c.method, c.args); !errors.Is(err, ErrOutsideContract) {
			t.Errorf("%s %v = %v, want ErrOutsideContract", c.method, c.args, err)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(root, "secret", "key")); string(data) != "hunter2" {
		t.Errorf("secret/key was changed: %q", data)
	}
}

func TestFileSystemConfinement(t *testing.T) {
	t.Parallel()
	s, root, outside := fsSet(t, Contract{Reads: []string{"*"}, Writes: []string{"*"}})
	// Symbolic links: one out of the root (relative and absolute), and one inside it.
	for name, target := range map[string]string{"notes/out": "../../outside", "notes/abs": outside, "notes/in": "../secret"} {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	escapes := []struct {
		method string
		path   string
	}{
		{"read", "../outside/passwd"},
		{"read", "notes/../../outside/passwd"},
		{"read", "/etc/passwd"},
		{"read", "notes/out/passwd"},
		{"read", "notes/abs/passwd"},
		{"list", "notes/out"},
		{"write", "notes/out/passwd"},
		{"write", "../escape"},
		{"stat", "notes/abs"},
		{"mkdir", "notes/out/x"},
		{"read", "a\x00b"},
	}
	for _, e := range escapes {
		args := map[string]any{"path": e.path}
		if e.method == "write" {
			args["content"] = "pwned"
		}
		_, err := fsCall(t, s, e.method, args)
		if err == nil {
			t.Errorf("%s %q succeeded", e.method, e.path)
		}
		if err != nil && strings.Contains(err.Error(), outside) {
			t.Errorf("%s %q: the error names the outside path: %v", e.method, e.path, err)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "passwd")); string(data) != "root:x:0:0" {
		t.Errorf("a file outside the root was changed: %q", data)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), "escape")); err == nil {
		t.Error("a file was written outside the root")
	}
	// A link inside the root is followed, and reported by what it really names.
	got, err := fsCall(t, s, "read", map[string]any{"path": "notes/in/key"})
	if err != nil || got["content"] != "hunter2" || got["path"] != "secret/key" {
		t.Errorf("read through a link inside the root = %v, %v", got, err)
	}
}

// A link inside the root whose target the contract does not cover is refused: the contract
// holds where the link leads, not only where it is.
func TestFileSystemLinksObeyTheContract(t *testing.T) {
	t.Parallel()
	s, root, _ := fsSet(t, Contract{Reads: []string{"file:notes/*"}, Writes: []string{"file:notes/*"}})
	if err := os.Symlink("../secret", filepath.Join(root, "notes", "in")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method string
		args   map[string]any
	}{
		{"read", map[string]any{"path": "notes/in/key"}},
		{"list", map[string]any{"path": "notes/in"}},
		{"write", map[string]any{"path": "notes/in/key", "content": "x"}},
	} {
		if _, err := fsCall(t, s, c.method, c.args); !errors.Is(err, ErrOutsideContract) {
			t.Errorf("%s %v = %v, want ErrOutsideContract", c.method, c.args, err)
		}
	}
	recs, _ := s.Audit(t.Context(), AuditQuery{})
	last := recs[len(recs)-1]
	if last.Outcome != OutcomeRefused || !strings.Contains(strings.Join(last.Accessed, ";"), "writes file:secret/key (refused)") {
		t.Errorf("the last refusal's record = %+v", last)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "secret", "key")); string(data) != "hunter2" {
		t.Errorf("secret/key was changed: %q", data)
	}
}

func TestFileSystemBudget(t *testing.T) {
	t.Parallel()
	s, _, _ := fsSet(t, Contract{Reads: []string{"*"}, Writes: []string{"*"}})
	ctx := t.Context()
	if err := s.SetStrategy(ctx, "fs", "", Strategy{Kind: BudgetBased, Budget: Budget{Bytes: 8, Files: 1}}, "alice"); err != nil {
		t.Fatal(err)
	}
	_, err := fsCall(t, s, "read", map[string]any{"path": "notes/a.txt"})
	var ar *ApprovalRequired
	if !errors.As(err, &ar) { // installed pre-approved: its contract was never shown
		t.Fatalf("the first call under a budget = %v, want the contract's approval", err)
	}
	if err := s.Decide(ctx, ar.Pending.ID, Decision{Approve: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := fsCall(t, s, "read", map[string]any{"path": "notes/a.txt"}); err != nil {
		t.Fatal(err)
	}
	got, err := fsCall(t, s, "read", map[string]any{"path": "notes/a.txt"}) // 3 bytes left
	if err != nil || got["content"] != "alp" || got["truncated"] != true {
		t.Errorf("a read with 3 bytes left = %v, %v", got, err)
	}
	if _, err := fsCall(t, s, "read", map[string]any{"path": "notes/a.txt"}); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("a read with none left = %v, want ErrBudgetExhausted", err)
	}
}

func TestFileSystemRevokedClosesTheRoot(t *testing.T) {
	t.Parallel()
	c, err := FileSystem(t.TempDir(), Contract{Reads: []string{"*"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Revoke(nil)
	if _, err := invokeDirect(t.Context(), c, "list", `{"path":"."}`); !errors.Is(err, ErrRevoked) {
		t.Errorf("list after revocation = %v, want ErrRevoked", err)
	}
	if _, err := FileSystem(filepath.Join(t.TempDir(), "none"), Contract{}, nil); err == nil {
		t.Error("a file system on a directory that does not exist")
	}
}
