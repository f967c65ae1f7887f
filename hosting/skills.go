package hosting

// Skills derived from what an agent can do (docs/multi-agent.md, "Skills are derived, never
// written"): a rule that answers a kind of message is a skill, whose examples are read from its
// condition's CEL; a model with a rule that consults it is a skill, naming what it may use.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"

	"github.com/a2awebcap/a2awebcap/agent"
)

// parser parses rule conditions; parsing needs no declarations.
var parser, _ = cel.NewEnv()

// deriveSkills lists the skills of b's agent.
func deriveSkills(b *built) []a2a.AgentSkill {
	pol := b.def.Policy
	var out []a2a.AgentSkill
	consults := false
	for _, r := range slices.Concat(pol.Axioms, pol.Rules) {
		if r.Action == agent.Consult {
			consults = true
		}
		ex, user := examples(r)
		if !user {
			continue
		}
		tags := []string{string(r.Action)}
		if c := calledCapability(r); c != "" {
			tags = append(tags, c)
		}
		out = append(out, a2a.AgentSkill{ID: r.Name, Name: r.Name, Description: cmp.Or(r.Description, r.Reason),
			Examples: ex, Tags: tags, InputModes: []string{"text/plain"}, OutputModes: []string{"text/plain"}})
	}
	if consults && b.def.Model != nil {
		var uses []string
		tags := []string{"model"}
		for _, name := range sortedKeys(b.def.Tools) {
			uses = append(uses, fmt.Sprintf("%s (%s)", name, b.def.ToolHelp[name]))
			tags = append(tags, name)
		}
		for _, o := range b.offers {
			uses = append(uses, fmt.Sprintf("%s (%s)", o.Manifest.Name, o.Manifest.Description))
			tags = append(tags, o.Manifest.Name)
		}
		desc := "Answers what its rules leave unanswered with its language model " + b.def.ModelName
		if len(uses) > 0 {
			desc += ", which may use: " + strings.Join(uses, "; ")
		}
		out = append(out, a2a.AgentSkill{ID: "model", Name: "model", Description: desc + ".", Tags: tags,
			InputModes: []string{"text/plain"}, OutputModes: []string{"text/plain"}})
	}
	return out
}

// examples reads from r's condition the messages it recognizes, and whether it answers a
// user's message at all: it does when its condition names message forms (command words,
// prefixes or whole texts), or reads the text and requires a user's message.
func examples(r agent.Rule) (ex []string, user bool) {
	parsed, iss := parser.Parse(r.When)
	if iss.Err() != nil {
		return nil, false // New reports it
	}
	root := parsed.NativeRep().Expr()
	rest := usesArgs(r)
	add := func(s string, more bool) {
		s = strings.TrimSpace(s)
		if s == "" {
			return
		}
		if more {
			s += " …"
		}
		if !slices.Contains(ex, s) {
			ex = append(ex, s)
		}
	}
	var readsText, fromUser bool
	walk(root, func(e ast.Expr) {
		switch e.Kind() {
		case ast.IdentKind:
			switch e.AsIdent() {
			case "text", "command", "args":
				readsText = true
			}
		case ast.CallKind:
			c := e.AsCall()
			args := c.Args()
			switch c.FunctionName() {
			case "_==_":
				if len(args) != 2 {
					return
				}
				x, lit := args[0], args[1]
				if _, ok := literal(x); ok {
					x, lit = lit, x
				}
				s, ok := literal(lit)
				switch {
				case !ok:
				case isIdent(x, "command"):
					add(s, rest)
				case isText(x):
					add(s, false)
				case isIdent(x, "source") && s == "user":
					fromUser = true
				}
			case "@in":
				if len(args) == 2 && isIdent(args[0], "command") && args[1].Kind() == ast.ListKind {
					for _, el := range args[1].AsList().Elements() {
						if s, ok := literal(el); ok {
							add(s, rest)
						}
					}
				}
			case "startsWith":
				if c.IsMemberFunction() && isText(c.Target()) && len(args) == 1 {
					if s, ok := literal(args[0]); ok {
						add(s, true)
					}
				}
			}
		}
	})
	return ex, len(ex) > 0 || (readsText && fromUser)
}

// usesArgs reports whether r reads the rest of the message (args) in its condition or
// parameters, beyond checking that there is one.
func usesArgs(r agent.Rule) bool {
	for _, p := range r.Params {
		if strings.Contains(p, "args") || strings.Contains(p, "substring") || strings.Contains(p, "text") {
			return true
		}
	}
	return false
}

// calledCapability is the capability (or tool) a call rule names by a literal, "" otherwise.
func calledCapability(r agent.Rule) string {
	if r.Action != agent.CallTool {
		return ""
	}
	parsed, iss := parser.Parse(r.Params["tool"])
	if iss.Err() != nil {
		return ""
	}
	s, ok := literal(parsed.NativeRep().Expr())
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(s, ".")
	return name
}

// walk calls f on e and everything below it.
func walk(e ast.Expr, f func(ast.Expr)) {
	if e == nil {
		return
	}
	f(e)
	switch e.Kind() {
	case ast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() {
			walk(c.Target(), f)
		}
		for _, a := range c.Args() {
			walk(a, f)
		}
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			walk(el, f)
		}
	case ast.SelectKind:
		walk(e.AsSelect().Operand(), f)
	}
}

// literal returns the string a literal expression is.
func literal(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().Value().(string)
	return s, ok
}

func isIdent(e ast.Expr, name string) bool { return e.Kind() == ast.IdentKind && e.AsIdent() == name }

// isText reports whether e is the message's text, possibly case-folded or trimmed.
func isText(e ast.Expr) bool {
	for e.Kind() == ast.CallKind {
		c := e.AsCall()
		switch c.FunctionName() {
		case "lowerAscii", "upperAscii", "trim":
			if !c.IsMemberFunction() || len(c.Args()) != 0 {
				return false
			}
			e = c.Target()
		default:
			return false
		}
	}
	return isIdent(e, "text")
}
