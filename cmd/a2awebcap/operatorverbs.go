package main

// The operator verbs: the operator extension (docs/sessions.md, "The operator") of an a2aWebCap
// agent, over any binding, for its operators.

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
)

const operatorUsage = `Operator verbs (the meta level of an a2aWebCap agent's instances, for its operators; -tenant names the principal's tenant):
  a2awebcap operator instances URL                     the principals that have an instance
  a2awebcap operator policy URL NAME                   an instance's policy versions and reviews ("" for the anonymous one)
  a2awebcap operator approve URL NAME REVIEW           approve a proposal held for review
  a2awebcap operator reject URL NAME REVIEW REASON...  reject it
  a2awebcap operator rollback URL NAME                 return to the previous policy version
`

var operatorArgs = map[string][]string{
	"instances": nil, "policy": {"NAME"}, "approve": {"NAME", "REVIEW"}, "reject": {"NAME", "REVIEW", "REASON..."}, "rollback": {"NAME"},
}

// runOperatorVerb runs "a2awebcap operator SUB URL ..."; it returns flag.ErrHelp after printing help.
func runOperatorVerb(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, operatorUsage)
		return flag.ErrHelp
	}
	sub, args := args[0], args[1:]
	names, ok := operatorArgs[sub]
	if !ok {
		fmt.Fprint(stderr, operatorUsage)
		return fmt.Errorf("operator: unknown verb %q", sub)
	}
	fs := flag.NewFlagSet("operator "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var vf verbFlags
	vf.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: a2awebcap operator %s URL %s[flags]\n\n", sub, strings.Join(append(names, ""), " "))
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1+len(names) || (sub != "reject" && len(pos) != 1+len(names)) {
		fs.Usage()
		return fmt.Errorf("operator %s takes %d argument(s), got %d", sub, 1+len(names), len(pos))
	}
	if vf.output != "text" && vf.output != "json" {
		return fmt.Errorf("-o %q: want text or json", vf.output)
	}
	ctx, c, done, err := vf.connect(pos[0], stderr)
	if err != nil {
		return err
	}
	defer done()
	o := c.Operator()
	var res json.RawMessage
	switch sub {
	case "instances":
		res, err = o.ListInstances(ctx, vf.tenant)
	case "policy":
		res, err = o.GetPolicy(ctx, vf.tenant, pos[1])
	case "approve":
		res, err = o.ApproveProposal(ctx, vf.tenant, pos[1], pos[2])
	case "reject":
		res, err = o.RejectProposal(ctx, vf.tenant, pos[1], pos[2], strings.Join(pos[3:], " "))
	case "rollback":
		res, err = o.RollbackPolicy(ctx, vf.tenant, pos[1])
	}
	if err != nil {
		return extVerbError(err)
	}
	return printRawJSON(stdout, res, vf.output == "json")
}

// printRawJSON writes an extension's JSON result on one line (compact), or indented.
func printRawJSON(w io.Writer, res json.RawMessage, compact bool) error {
	var b bytes.Buffer
	var err error
	if compact {
		err = json.Compact(&b, res)
	} else {
		err = json.Indent(&b, res, "", "  ")
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b.Bytes())
	return err
}
