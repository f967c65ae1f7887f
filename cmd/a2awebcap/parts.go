package main

// Files and data in messages (-f, -data) and file artifacts saved (-save).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// maxSendFile bounds a file sent inline with -f: it travels base64-encoded in one request, and
// the agent bounds its requests too (a2awebcap serve: 4 MiB by default).
const maxSendFile = 64 << 20

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ", ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// messageParts are the parts of a message: its text, then each -f file, then each -data value.
func messageParts(text string, files, data []string) (a2a.ContentParts, error) {
	var parts a2a.ContentParts
	if text != "" {
		parts = append(parts, a2a.NewTextPart(text))
	}
	for _, name := range files {
		p, err := filePart(name)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	for _, d := range data {
		v, err := dataValue(d)
		if err != nil {
			return nil, err
		}
		parts = append(parts, a2a.NewDataPart(v))
	}
	return parts, nil
}

// filePart reads a file into a part carrying its bytes, its name and its media type (by its
// extension, else by its content).
func filePart(name string) (*a2a.Part, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, usageError{fmt.Errorf("-f: %w", err)}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSendFile+1))
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", name, err)
	}
	if len(b) > maxSendFile {
		return nil, usageError{fmt.Errorf("-f %s: larger than %d MiB, too large to send in a message", name, maxSendFile>>20)}
	}
	p := a2a.NewRawPart(b)
	p.Filename = filepath.Base(name)
	p.MediaType = mime.TypeByExtension(filepath.Ext(name))
	if p.MediaType == "" {
		p.MediaType = http.DetectContentType(b)
	}
	return p, nil
}

// dataValue parses -data: JSON, or @FILE for JSON read from a file ("@-": standard input is
// not read, to keep chat's input its own).
func dataValue(s string) (any, error) {
	b := []byte(s)
	if name, ok := strings.CutPrefix(s, "@"); ok {
		var err error
		if b, err = os.ReadFile(name); err != nil {
			return nil, usageError{fmt.Errorf("-data: %w", err)}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, usageError{fmt.Errorf("-data: not JSON: %v", err)}
	}
	if dec.More() {
		return nil, usageError{errors.New("-data: more than one JSON value")}
	}
	return v, nil
}

// saver writes the file parts of artifacts into a directory (-save DIR), confined to it: a
// file's name is its base name only, and an existing file is never overwritten (a suffix
// -1, -2, … is added).
type saver struct {
	dir   string
	root  *os.Root
	files map[string]string // the file each artifact's chunks go to, by artifact and part name
}

func newSaver(dir string) (*saver, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, usageError{fmt.Errorf("-save: %w", err)}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, usageError{fmt.Errorf("-save: %w", err)}
	}
	return &saver{dir: dir, root: root, files: map[string]string{}}, nil
}

func (s *saver) Close() error { return s.root.Close() }

// write saves part p of the artifact named artifact; appended chunks go to the same file. It
// returns the file's path.
func (s *saver) write(artifact string, p *a2a.Part, appended bool) (string, error) {
	key := artifact + "\x00" + p.Filename
	if name, ok := s.files[key]; ok && appended {
		f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return "", err
		}
		_, err = f.Write(p.Raw())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return filepath.Join(s.dir, name), err
	}
	base := safeName(p.Filename)
	if base == "" {
		base = safeName(artifact)
		if exts, _ := mime.ExtensionsByType(p.MediaType); len(exts) > 0 && filepath.Ext(base) == "" {
			base += exts[0]
		}
	}
	if base == "" {
		base = "artifact"
	}
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	for i := 0; i < 1000; i++ {
		name := base
		if i > 0 {
			name = stem + "-" + strconv.Itoa(i) + ext
		}
		f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(p.Raw())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		s.files[key] = name
		return filepath.Join(s.dir, name), err
	}
	return "", fmt.Errorf("-save: too many files named %s in %s", base, s.dir)
}

// safeName is the last element of a name an agent chose, without what would leave the
// directory or hide the file: "" when nothing usable is left.
func safeName(name string) string {
	name = strings.ReplaceAll(name, "\\", "/")
	name = name[strings.LastIndex(name, "/")+1:]
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, name)
	name = strings.TrimLeft(strings.TrimSpace(name), ".")
	if len(name) > 200 {
		name = name[:200]
	}
	return name
}
