package mediatype

import (
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"
)

func TestOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		part *a2a.Part
		want string
		err  bool
	}{
		{"text", a2a.NewTextPart("x"), Text, false},
		{"data", a2a.NewDataPart(map[string]any{}), Data, false},
		{"raw", a2a.NewRawPart([]byte{1}), Binary, false},
		{"url", a2a.NewFileURLPart("https://example.com/f", ""), Binary, false},
		{"declared", &a2a.Part{Content: a2a.Text("x"), MediaType: "Text/Markdown; charset=UTF-8"}, "text/markdown", false},
		{"declared on a file", a2a.NewFileURLPart("https://example.com/f.png", "image/png"), "image/png", false},
		{"malformed", &a2a.Part{Content: a2a.Text("x"), MediaType: "not a type"}, "", true},
	} {
		got, err := Of(tc.part)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%s: Of() = %q, %v; want %q, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestAccepts(t *testing.T) {
	t.Parallel()
	modes := []string{"text/*", "Application/JSON; charset=utf-8", " image/png "}
	for mt, want := range map[string]bool{
		"text/plain": true, "text/markdown": true, "application/json": true, "image/png": true,
		"application/jsonx": false, "image/jpeg": false, "textual/plain": false, "text": false,
	} {
		if got := Accepts(modes, mt); got != want {
			t.Errorf("Accepts(%v, %q) = %v, want %v", modes, mt, got, want)
		}
	}
	if !Accepts([]string{"*/*"}, "application/pdf") {
		t.Error(`Accepts(["*/*"], "application/pdf") = false, want true`)
	}
}

func TestModes(t *testing.T) {
	t.Parallel()
	card := &a2a.AgentCard{
		DefaultInputModes: []string{"text/plain", ""},
		Skills: []a2a.AgentSkill{
			{ID: "a"},
			{ID: "b", InputModes: []string{"image/*", "text/plain"}},
		},
	}
	if diff := cmp.Diff([]string{"text/plain", "image/*"}, Modes(card)); diff != "" {
		t.Errorf("Modes() (-want +got):\n%s", diff)
	}
	if got := Modes(&a2a.AgentCard{}); got != nil {
		t.Errorf("Modes(no modes) = %v, want nil", got)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	modes := []string{"text/plain"}
	ok := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("x"))
	if err := Check(ok, modes); err != nil {
		t.Errorf("Check(text) = %v", err)
	}
	bad := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("x"), a2a.NewRawPart([]byte{1}))
	err := Check(bad, modes)
	if !errors.Is(err, a2a.ErrUnsupportedContentType) {
		t.Errorf("Check(raw) = %v, want ErrUnsupportedContentType", err)
	}
	if err := Check(bad, nil); err != nil {
		t.Errorf("Check(no modes) = %v, want nil: a card without modes refuses nothing", err)
	}
	long := a2a.NewMessage(a2a.MessageRoleUser, &a2a.Part{Content: a2a.Text("x"), MediaType: "text/" + string(make([]byte, 10000))})
	if err := Check(long, modes); err == nil || len(err.Error()) > 300 {
		t.Errorf("Check(long media type) = %d bytes of error, want a short one", len(err.Error()))
	}
}
