package codec

import (
	"errors"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/store"
)

func TestTokenRoundTrip(t *testing.T) {
	for _, c := range []Cursor{
		{Updated: FromMicros(0), ID: "a"},
		{Updated: FromMicros(1767225600123456), ID: "task.with.dots and spaces/ü"},
		{Updated: FromMicros(-5), ID: "before-1970"},
	} {
		tok := EncodeToken(c)
		got, err := DecodeToken(tok)
		if err != nil || got == nil || !got.Updated.Equal(c.Updated) || got.ID != c.ID {
			t.Errorf("DecodeToken(EncodeToken(%v)) = %v, %v", c, got, err)
		}
	}
	if c, err := DecodeToken(""); c != nil || err != nil {
		t.Errorf(`DecodeToken("") = %v, %v; want the first page`, c, err)
	}
	if _, err := DecodeToken("%%%"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("bad token: %v", err)
	}
}

func TestCursorAfter(t *testing.T) {
	c := Cursor{Updated: FromMicros(100), ID: "m"}
	for _, x := range []struct {
		us   int64
		id   string
		want bool
	}{{99, "a", true}, {101, "z", false}, {100, "n", true}, {100, "m", false}, {100, "a", false}} {
		if got := c.After(FromMicros(x.us), a2a.TaskID(x.id)); got != x.want {
			t.Errorf("After(%d, %s) = %v, want %v", x.us, x.id, got, x.want)
		}
	}
}

func TestPageSize(t *testing.T) {
	for in, want := range map[int]int{0: 50, 1: 1, 100: 100, 101: 100} {
		if got, err := PageSize(store.ListQuery{PageSize: in}); err != nil || got != want {
			t.Errorf("PageSize(%d) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := PageSize(store.ListQuery{PageSize: -1}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("PageSize(-1): %v", err)
	}
}

func TestNow(t *testing.T) {
	n := Now()
	if n.Location() != time.UTC || n.Nanosecond()%1000 != 0 || n != n.Round(0) {
		t.Errorf("Now() = %v: want UTC, whole µs, no monotonic reading", n)
	}
}
