package agent

// Notes is the policy of a ready note-taking agent. Everything it does comes from these rules:
//
//	remember SUBJECT is VALUE   stores a belief (a contradiction demotes the old one)
//	remember SUBJECT            asks what SUBJECT is, then stores the answer
//	actually SUBJECT is VALUE   corrects a belief (the old one is superseded, kept in history)
//	what do you know about X    recalls beliefs about X
//	forget SUBJECT              forgets a belief
//	who are you                 says who it is (an axiom)
//
// Messages that mention a password, secret or API key are refused by a safety axiom.
func Notes() *Policy {
	const subject = `args.indexOf(" is ") >= 0 ? args.substring(0, args.indexOf(" is ")).trim() : args`
	const value = `args.substring(args.indexOf(" is ") + 4).trim()`
	return &Policy{
		Axioms: []Rule{
			{Name: "safety", When: `text.lowerAscii().matches("password|secret|api[ _-]?key")`, Action: Reply,
				Params: map[string]string{"text": `"I do not keep secrets; nothing was stored."`}, Stop: true,
				Reason: "secrets must never enter memory"},
			{Name: "identity", Description: "Says who it is and what it does", When: `text.lowerAscii().trim().startsWith("who are you")`, Action: Reply,
				Params: map[string]string{"text": `"I am " + self + ", a note-taking agent. I remember what you tell me, with where it came from."`},
				Stop:   true, Reason: "an agent states who it is"},
		},
		Rules: []Rule{
			{Name: "answer", When: `pending != "" && source == "user"`, Action: Remember,
				Params: map[string]string{"subject": `pending`, "value": `text.trim()`},
				Reason: "the user answered my question"},
			{Name: "remember", Description: "Remembers a fact you tell it, with where it came from", When: `command == "remember" && args.indexOf(" is ") > 0`, Action: Remember,
				Params: map[string]string{"subject": subject, "value": value}, Reason: "the user told me"},
			{Name: "ask-value", Description: "Asks for the value of a fact you name without one, then remembers your answer", When: `command == "remember" && args != "" && args.indexOf(" is ") <= 0`, Action: AskInput,
				Params: map[string]string{"text": `"What is " + args + "?"`, "subject": `args`}, Stop: true,
				Reason: "a note needs a value"},
			{Name: "correct", Description: "Corrects a fact it knew; the old one stays in its history", When: `command in ["actually", "correction:"] && args.indexOf(" is ") > 0`, Action: Revise,
				Params: map[string]string{"subject": subject, "value": value}, Reason: "the user corrected me"},
			{Name: "recall", Description: "Tells what it knows about something, with the sources", When: `text.lowerAscii().startsWith("what do you know about ")`, Action: Recall,
				Params: map[string]string{"query": `text.substring(23).trim()`}, Reason: "the user asked"},
			{Name: "forget", Description: "Forgets a fact; it stays in its history", When: `command == "forget" && args != ""`, Action: Forget,
				Params: map[string]string{"subject": `args`}, Reason: "the user asked me to forget"},
			{Name: "ack-stored", When: `last.status in ["stored", "corroborated", "revised"]`, Action: Reply,
				Params: map[string]string{"text": `(last.status == "revised" ? "Corrected: " : "Noted: ") + last.subject + " is " + last.value + "."`},
				Reason: "say what was stored"},
			{Name: "ack-contradiction", When: `last.status == "contradiction"`, Action: Reply,
				Params: map[string]string{"text": `"That contradicts what I knew: " + last.subject + " is " + last.previous + ". I trust that less now; say \"actually " + last.subject + " is " + last.value + "\" to correct it."`},
				Reason: "contradictions are reported, not silently resolved"},
			{Name: "ack-recall", When: `last.action == "recall"`, Action: Reply,
				Params: map[string]string{"text": `last.status == "found" ? "I know: " + last.result + "." : "I know nothing about that."`},
				Reason: "answer what was asked"},
			{Name: "ack-forget", When: `last.action == "forget"`, Action: Reply,
				Params: map[string]string{"text": `last.status == "forgotten" ? "Forgotten: " + last.subject + "." : "I knew nothing about " + last.subject + "."`},
				Reason: "say what was forgotten"},
			{Name: "help", When: `state.fired == 0 && source == "user"`, Action: Reply,
				Params: map[string]string{"text": `"Tell me \"remember X is Y\", \"actually X is Y\", \"what do you know about X\" or \"forget X\"."`},
				Reason: "say what I understand"},
		},
	}
}
