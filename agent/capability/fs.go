package capability

// The file system capability: files under one directory the operator names, through os.Root,
// so that no path — "..", absolute, or through a symbolic link — leaves it. Resources are
// "file:" and the clean slash path relative to the root ("file:." is the root).

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// FileSystemOptions configure FileSystem; nil or zero fields mean the defaults.
type FileSystemOptions struct {
	// MaxRead is the most bytes a read returns; 0 means 1 MiB.
	MaxRead int64
	// MaxList is the most entries a list returns; 0 means 1000.
	MaxList int
}

// ErrBadPath reports a path the file system does not accept: absolute, leaving the root, or
// with a NUL byte.
var ErrBadPath = errors.New("capability: bad path")

// maxSymlinks bounds the symbolic links followed resolving one path, as Linux does.
const maxSymlinks = 40

// FileSystem returns a file system capability confined to the directory root under contract:
// methods read, write, list, stat, remove and mkdir, each checked against the contract's
// file: patterns (reads for read, list and stat; writes for write, remove and mkdir). A
// symbolic link is followed only when the contract allows both its name and its target, and
// never out of the root. The root stays open until the capability is revoked.
func FileSystem(root string, contract Contract, opts *FileSystemOptions) (*Capability, error) {
	if opts == nil {
		opts = &FileSystemOptions{}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("capability: file system root: %w", err)
	}
	f := &fileSystem{root: r, maxRead: opts.MaxRead, maxList: opts.MaxList}
	if f.maxRead <= 0 {
		f.maxRead = 1 << 20
	}
	if f.maxList <= 0 {
		f.maxList = 1000
	}
	pathArg := String("a path relative to the file system's root, with / between names")
	entry := Object("", map[string]*Schema{"name": String(""), "dir": Boolean(""), "size": Integer("")}, "name", "dir", "size")
	c, err := New(Description{Name: "fs", Description: "Files in a directory the operator chose",
		Methods: []Method{
			{Name: "read", Description: "Read a file: its text, or base64 when it is not UTF-8",
				Params: Object("", map[string]*Schema{"path": pathArg,
					"offset": {Type: "integer", Description: "where to start, in bytes (default 0)", Minimum: ptr(0.0)},
					"length": {Type: "integer", Description: "the most bytes to read (default and maximum: the limit)", Minimum: ptr(0.0)}}, "path"),
				Result: Object("", map[string]*Schema{"path": String(""), "content": String(""),
					"encoding": {Type: "string", Enum: []string{"utf-8", "base64"}}, "size": Integer("the file's size"),
					"truncated": Boolean("whether there is more after what was read")}, "path", "content", "encoding", "size", "truncated")},
			{Name: "write", Description: "Write a file, creating it and its directories, replacing or appending",
				Params: Object("", map[string]*Schema{"path": pathArg, "content": String("what to write"),
					"encoding": {Type: "string", Description: "utf-8 (default) or base64", Enum: []string{"utf-8", "base64"}},
					"append":   Boolean("append instead of replacing")}, "path", "content"),
				Result: Object("", map[string]*Schema{"path": String(""), "bytes": Integer("bytes written")}, "path", "bytes")},
			{Name: "list", Description: "List a directory",
				Params: Object("", map[string]*Schema{"path": pathArg}, "path"),
				Result: Object("", map[string]*Schema{"path": String(""), "entries": Array("", entry), "truncated": Boolean("")}, "path", "entries", "truncated")},
			{Name: "stat", Description: "Whether a path exists, and what it is",
				Params: Object("", map[string]*Schema{"path": pathArg}, "path"),
				Result: Object("", map[string]*Schema{"path": String(""), "exists": Boolean(""), "dir": Boolean(""),
					"size": Integer(""), "modified": String("RFC 3339")}, "path", "exists")},
			{Name: "remove", Description: "Remove a file or an empty directory",
				Params: Object("", map[string]*Schema{"path": pathArg}, "path"),
				Result: Object("", map[string]*Schema{"path": String("")}, "path")},
			{Name: "mkdir", Description: "Make a directory and its parents",
				Params: Object("", map[string]*Schema{"path": pathArg}, "path"),
				Result: Object("", map[string]*Schema{"path": String("")}, "path")},
		},
		Contract: contract},
		Funcs{"read": f.read, "write": f.write, "list": f.list, "stat": f.stat, "remove": f.remove, "mkdir": f.mkdir})
	if err != nil {
		r.Close()
		return nil, err
	}
	context.AfterFunc(c.life, func() { r.Close() })
	return c, nil
}

type fileSystem struct {
	root    *os.Root
	maxRead int64
	maxList int
}

// cleanPath turns a caller's path into a clean relative one, or refuses it.
func cleanPath(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w: NUL byte", ErrBadPath)
	}
	if path.IsAbs(p) {
		return "", fmt.Errorf("%w: %q is absolute: paths are relative to the root", ErrBadPath, truncate(p, 200))
	}
	c := path.Clean(cmpOr(p, "."))
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%w: %q leaves the root", ErrBadPath, truncate(p, 200))
	}
	return c, nil
}

// resolve follows the symbolic links of p (clean, relative) within the root: it returns the
// path p really names, or an error if a link leads out of the root or there are too many. A
// component that does not exist ends the resolution (what follows is kept as is).
func (f *fileSystem) resolve(p string) (string, error) {
	if p == "." {
		return p, nil
	}
	done, rest := "", p
	for hops := 0; rest != ""; {
		var name string
		name, rest, _ = strings.Cut(rest, "/")
		next := path.Join(done, name)
		fi, err := f.root.Lstat(next)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			if err != nil { // does not exist (yet): the rest is as named
				return path.Join(next, rest), nil
			}
			done = next
			continue
		}
		if hops++; hops > maxSymlinks {
			return "", fmt.Errorf("%w: too many symbolic links in %q", ErrBadPath, truncate(p, 200))
		}
		target, err := f.root.Readlink(next)
		if err != nil {
			return "", fsError(p, err)
		}
		if path.IsAbs(target) {
			return "", fmt.Errorf("%w: %q is a symbolic link out of the root", ErrBadPath, truncate(p, 200))
		}
		joined := path.Join(done, target)
		if joined == ".." || strings.HasPrefix(joined, "../") {
			return "", fmt.Errorf("%w: %q is a symbolic link out of the root", ErrBadPath, truncate(p, 200))
		}
		done, rest = "", strings.TrimPrefix(path.Join(joined, rest), "./")
		if rest == "." {
			return ".", nil
		}
	}
	return done, nil
}

// target checks access a to the path a call names and to the path it resolves to, and
// returns the resolved one.
func (f *fileSystem) target(c *Call, a Access, p string) (string, error) {
	named, err := cleanPath(p)
	if err != nil {
		return "", err
	}
	if err := c.Check(a, "file:"+named); err != nil {
		return "", err
	}
	real, err := f.resolve(named)
	if err != nil {
		return "", err
	}
	if real != named {
		if err := c.Check(a, "file:"+real); err != nil {
			return "", err
		}
	}
	return real, nil
}

// fsError says what went wrong with p in words that name nothing beyond p.
func fsError(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("fs: %s: no such file or directory", p)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("fs: %s: already exists", p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("fs: %s: permission denied", p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("fs: %s: %v", p, pe.Err)
	}
	return fmt.Errorf("fs: %s: %v", p, err)
}

// pathArg decodes a call whose only argument is a path and checks access a to it.
func (f *fileSystem) pathArg(c *Call, a Access) (string, error) {
	var args struct{ Path string }
	if err := c.Decode(&args); err != nil {
		return "", err
	}
	return f.target(c, a, args.Path)
}

func (f *fileSystem) read(_ context.Context, c *Call) (any, error) {
	var a struct {
		Path           string
		Offset, Length *int64
	}
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	p, err := f.target(c, Read, a.Path)
	if err != nil {
		return nil, err
	}
	file, err := f.root.Open(p)
	if err != nil {
		return nil, fsError(p, err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, fsError(p, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("fs: %s: is a directory", p)
	}
	limit := f.maxRead
	if a.Length != nil && *a.Length < limit {
		limit = *a.Length
	}
	if left := c.Remaining(); left >= 0 && left < limit {
		limit = left
	}
	off := int64(0)
	if a.Offset != nil {
		off = *a.Offset
	}
	data, err := io.ReadAll(io.LimitReader(io.NewSectionReader(file, off, max(fi.Size()-off, 0)+1), limit))
	if err != nil {
		return nil, fsError(p, err)
	}
	if err := c.Charge(int64(len(data))); err != nil {
		return nil, err
	}
	truncated := off+int64(len(data)) < fi.Size()
	content, enc := string(data), "utf-8"
	if !utf8.Valid(data) {
		content, enc = base64.StdEncoding.EncodeToString(data), "base64"
	}
	return map[string]any{"path": p, "content": content, "encoding": enc, "size": fi.Size(), "truncated": truncated}, nil
}

func (f *fileSystem) write(_ context.Context, c *Call) (any, error) {
	var a struct {
		Path, Content, Encoding string
		Append                  bool
	}
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	data := []byte(a.Content)
	if a.Encoding == "base64" {
		var err error
		if data, err = base64.StdEncoding.DecodeString(a.Content); err != nil {
			return nil, fmt.Errorf("%w: content is not base64", ErrBadArgs)
		}
	}
	p, err := f.target(c, Write, a.Path)
	if err != nil {
		return nil, err
	}
	if p == "." {
		return nil, fmt.Errorf("fs: %s: is a directory", p)
	}
	if err := c.Charge(int64(len(data))); err != nil {
		return nil, err
	}
	if dir := path.Dir(p); dir != "." {
		if err := f.root.MkdirAll(dir, 0o755); err != nil {
			return nil, fsError(dir, err)
		}
	}
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if a.Append {
		flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	file, err := f.root.OpenFile(p, flag, 0o644)
	if err != nil {
		return nil, fsError(p, err)
	}
	n, err := file.Write(data)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fsError(p, err)
	}
	return map[string]any{"path": p, "bytes": n}, nil
}

func (f *fileSystem) list(_ context.Context, c *Call) (any, error) {
	p, err := f.pathArg(c, Read)
	if err != nil {
		return nil, err
	}
	dir, err := f.root.Open(p)
	if err != nil {
		return nil, fsError(p, err)
	}
	defer dir.Close()
	ents, err := dir.ReadDir(f.maxList + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fsError(p, err)
	}
	truncated := len(ents) > f.maxList
	ents = ents[:min(len(ents), f.maxList)]
	slices.SortFunc(ents, func(x, y fs.DirEntry) int { return strings.Compare(x.Name(), y.Name()) })
	out := make([]map[string]any, 0, len(ents))
	for _, e := range ents {
		size := int64(0)
		if fi, err := e.Info(); err == nil && !e.IsDir() {
			size = fi.Size()
		}
		out = append(out, map[string]any{"name": e.Name(), "dir": e.IsDir(), "size": size})
	}
	return map[string]any{"path": p, "entries": out, "truncated": truncated}, nil
}

func (f *fileSystem) stat(_ context.Context, c *Call) (any, error) {
	p, err := f.pathArg(c, Read)
	if err != nil {
		return nil, err
	}
	fi, err := f.root.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{"path": p, "exists": false}, nil
	}
	if err != nil {
		return nil, fsError(p, err)
	}
	return map[string]any{"path": p, "exists": true, "dir": fi.IsDir(), "size": fi.Size(),
		"modified": fi.ModTime().UTC().Format(time.RFC3339)}, nil
}

func (f *fileSystem) remove(_ context.Context, c *Call) (any, error) {
	p, err := f.pathArg(c, Write)
	if err != nil {
		return nil, err
	}
	if p == "." {
		return nil, fmt.Errorf("fs: the root cannot be removed")
	}
	if err := f.root.Remove(p); err != nil {
		return nil, fsError(p, err)
	}
	return map[string]any{"path": p}, nil
}

func (f *fileSystem) mkdir(_ context.Context, c *Call) (any, error) {
	p, err := f.pathArg(c, Write)
	if err != nil {
		return nil, err
	}
	if err := f.root.MkdirAll(p, 0o755); err != nil {
		return nil, fsError(p, err)
	}
	return map[string]any{"path": p}, nil
}
