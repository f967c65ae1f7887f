package hosting

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/x402"
)

// A message that a priced form's rule would take is charged: a form is a prefix of the
// message, not a word of it, so "research:moons" pays like "research: moons" (a rule testing
// text.startsWith("research:") takes both). When in doubt it charges, never runs free.
func TestPriceOfChargesEveryMessageOfAForm(t *testing.T) {
	price := priceOf([]priced{{forms: []string{"research:", "summarize"}, req: x402.Requirements{}}})
	for text, want := range map[string]bool{
		"research:moons":      true,
		"research: moons":     true,
		"  Research:   moons": true,
		"summarize":           true,
		"SUMMARIZE this":      true,
		"hello":               false,
		"please research:":    false,
	} {
		reqs, err := price(t.Context(), &a2asrv.ExecutorContext{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(reqs) == 1; got != want {
			t.Errorf("%q priced = %v, want %v", text, got, want)
		}
	}
}
