package push

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2awebcap/a2awebcap/store/memory"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	key, err := LoadKey(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	other, err := LoadKey(t.Context(), memory.New())
	if err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(key)
	t.Cleanup(jwks.Close)
	const body = `{"statusUpdate":{"taskId":"t1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`
	request := func(k *Key, c Claims, sentBody string) *http.Request {
		if c.BodySHA256 == "" {
			c.BodySHA256 = bodyHash([]byte(body))
		}
		sig, err := k.sign(&c)
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodPost, "http://receiver.example/hook", strings.NewReader(sentBody))
		r.Header.Set(SignatureHeader, sig)
		r.Header.Set(DeliveryHeader, c.ID)
		return r
	}
	now := time.Now().Unix()
	tests := []struct {
		name string
		r    *http.Request
		want error
	}{
		{"valid", request(key, Claims{ID: "d1", IssuedAt: now, Audience: "http://receiver.example/hook", Seq: 1}, body), nil},
		{"repeat", request(key, Claims{ID: "d1", IssuedAt: now, Audience: "http://receiver.example/hook", Seq: 1}, body), ErrDuplicate},
		{"tampered body", request(key, Claims{ID: "d2", IssuedAt: now, Audience: "http://receiver.example/hook"}, strings.Replace(body, "WORKING", "COMPLETED", 1)), ErrSignature},
		{"other key", request(other, Claims{ID: "d3", IssuedAt: now, Audience: "http://receiver.example/hook"}, body), ErrSignature},
		{"stale", request(key, Claims{ID: "d4", IssuedAt: now - 3600, Audience: "http://receiver.example/hook"}, body), ErrStale},
		{"other audience", request(key, Claims{ID: "d5", IssuedAt: now, Audience: "http://elsewhere.example/"}, body), ErrSignature},
	}
	v := NewVerifier(jwks.URL, &VerifierOptions{Audience: "http://receiver.example/hook"})
	for _, tc := range tests {
		n, err := v.Verify(tc.r)
		if !errors.Is(err, tc.want) || (err != nil) != (tc.want != nil) {
			t.Errorf("%s: Verify() = %v, want %v", tc.name, err, tc.want)
		}
		if tc.want == nil && (n == nil || n.Event == nil || n.Seq != 1) {
			t.Errorf("%s: Verify() = %+v", tc.name, n)
		}
	}
	r := request(key, Claims{ID: "d6", IssuedAt: now, Audience: "http://receiver.example/hook"}, body)
	r.Header.Del(SignatureHeader)
	if _, err := v.Verify(r); !errors.Is(err, ErrSignature) {
		t.Errorf("unsigned: Verify() = %v, want ErrSignature", err)
	}
}
