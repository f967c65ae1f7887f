package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/a2awebcap/a2awebcap/web"
)

// buildVersion describes the running binary, from what the Go toolchain recorded in it.
type buildVersion struct {
	Module   string `json:"module"`
	Version  string `json:"version"`            // "v1.2.3" from go install …@v1.2.3; "(devel)" from a checkout
	Revision string `json:"revision,omitempty"` // the VCS commit, when the build recorded it
	Time     string `json:"time,omitempty"`     // the commit's time
	Modified bool   `json:"modified,omitempty"` // built from a work tree with uncommitted changes
	Go       string `json:"go"`
	Platform string `json:"platform"`
	Capnweb  string `json:"capnweb"` // the npm capnweb release the web page loads
}

func readVersion() buildVersion {
	v := buildVersion{Module: "github.com/a2awebcap/a2awebcap", Version: "(devel)", Go: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, Capnweb: web.CapnwebVersion}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// runVersion prints the binary's version: `a2awebcap version [-o json]`.
func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	output := fs.String("o", "text", "output: text or json")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 || (*output != "text" && *output != "json") {
		return usageError{fmt.Errorf("usage: a2awebcap version [-o json]")}
	}
	v := readVersion()
	if *output == "json" {
		return (&printer{w: stdout}).jsonLine(v)
	}
	fmt.Fprintf(stdout, "a2awebcap %s (%s)\n", v.Version, v.Module)
	switch {
	case v.Revision != "":
		mod := ""
		if v.Modified {
			mod = ", with uncommitted changes"
		}
		fmt.Fprintf(stdout, "revision %s (%s%s)\n", v.Revision, v.Time, mod)
	default:
		fmt.Fprintln(stdout, "revision unknown (built without VCS information)")
	}
	fmt.Fprintf(stdout, "%s %s, web page with capnweb %s\n", v.Go, v.Platform, v.Capnweb)
	return nil
}
