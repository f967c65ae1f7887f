package capability

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

const testManifest = `{
  "name": "weather",
  "version": "0.1.0",
  "description": "The weather at a place",
  "contract": {"network": ["https://api.weather.example/*"]},
  "strategy": {"minimum": "contract", "recommended": "call-by-call"},
  "methods": [{"name": "at", "description": "the weather at a place",
    "params": {"type": "object", "properties": {"place": {"type": "string"}}, "required": ["place"]}}],
  "runtime": "starlark",
  "source": "capability.star",
  "tests": "test.star"
}`

// writePackage writes a package directory and returns it.
func writePackage(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func weatherPackage(t *testing.T) string {
	return writePackage(t, map[string]string{
		"manifest.json":    testManifest,
		"capability.star":  "def at(place):\n    return fetch.get(url = \"https://api.weather.example/\" + place)\n",
		"test.star":        "def test_at():\n    pass\n",
		"README.md":        "# weather\n",
		"testdata/x.json":  "{}",
		"docs/example.txt": "at(\"Paris\")",
	})
}

// signer is a P-256 key and the JWK set that trusts it.
func signer(t *testing.T, kid string) (*ecdsa.PrivateKey, *jose.JSONWebKeySet) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k, &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: kid, Algorithm: "ES256", Use: "sig"}}}
}

func TestSignedPackage(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	key, keys := signer(t, "author-1")
	dir := weatherPackage(t)
	if err := SignPackage(dir, key, "author-1"); err != nil {
		t.Fatal(err)
	}
	p, err := ReadPackage(ctx, dir, &PackageOptions{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if p.Signer != "author-1" || p.Manifest.Name != "weather" || len(p.Files) != 6 || !strings.Contains(string(p.Source()), "def at") {
		t.Errorf("package = %+v", p)
	}
	// Reformatting the manifest keeps the signature: it signs the canonical manifest.
	reformatted := strings.ReplaceAll(strings.ReplaceAll(testManifest, "\n", ""), "  ", "")
	reformatted = strings.Replace(reformatted, `"version": "0.1.0",`, ``, 1)
	reformatted = strings.Replace(reformatted, `{"name": "weather",`, `{"version": "0.1.0", "name": "weather",`, 1)
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(reformatted), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPackage(ctx, dir, &PackageOptions{Keys: keys}); err != nil {
		t.Errorf("a reformatted manifest: %v", err)
	}
}

func TestTamperedPackagesAreRefused(t *testing.T) {
	t.Parallel()
	key, keys := signer(t, "author-1")
	tamper := map[string]func(dir string) error{
		"a manifest value": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "manifest.json"),
				[]byte(strings.Replace(testManifest, "https://api.weather.example/*", "https://*", 1)), 0o644)
		},
		"a byte of the source": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "capability.star"), []byte("def at(place):\n    return fetch.get(url = \"https://evil.example/\" + place)\n"), 0o644)
		},
		"a file added":   func(dir string) error { return os.WriteFile(filepath.Join(dir, "extra.star"), []byte("x = 1"), 0o644) },
		"a hidden file":  func(dir string) error { return os.WriteFile(filepath.Join(dir, ".hidden"), []byte("x"), 0o644) },
		"a file removed": func(dir string) error { return os.Remove(filepath.Join(dir, "README.md")) },
		"a file renamed": func(dir string) error {
			return os.Rename(filepath.Join(dir, "README.md"), filepath.Join(dir, "README.txt"))
		},
		"a nested file": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "testdata", "x.json"), []byte("[]"), 0o644)
		},
		"another signature": func(dir string) error { k, _ := signer(t, "author-1"); return SignPackage(dir, k, "author-1") },
		"an unknown key":    func(dir string) error { k, _ := signer(t, "mallory"); return SignPackage(dir, k, "mallory") },
		"alg none": func(dir string) error {
			h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"author-1"}`))
			return os.WriteFile(filepath.Join(dir, SignatureFile), []byte(h+".."), 0o644)
		},
		"HS256 with the public key": func(dir string) error {
			h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"author-1"}`))
			return os.WriteFile(filepath.Join(dir, SignatureFile), []byte(h+"..c2ln"), 0o644)
		},
		"garbage": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, SignatureFile), []byte("not a jws"), 0o644)
		},
	}
	for name, f := range tamper {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := weatherPackage(t)
			if err := SignPackage(dir, key, "author-1"); err != nil {
				t.Fatal(err)
			}
			if err := f(dir); err != nil {
				t.Fatal(err)
			}
			if p, err := ReadPackage(t.Context(), dir, &PackageOptions{Keys: keys}); !errors.Is(err, ErrSignature) {
				t.Errorf("ReadPackage = %+v, %v, want ErrSignature", p, err)
			}
		})
	}
}

func TestPackageChecks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	key, keys := signer(t, "author-1")

	dir := weatherPackage(t)
	if _, err := ReadPackage(ctx, dir, &PackageOptions{Keys: keys}); !errors.Is(err, ErrUnsigned) {
		t.Errorf("an unsigned package = %v, want ErrUnsigned", err)
	}
	if _, err := ReadPackage(ctx, dir, &PackageOptions{AllowUnsigned: true}); err != nil {
		t.Errorf("an unsigned package, allowed: %v", err)
	}

	// The check hook sees the verified package and may refuse it.
	if err := SignPackage(dir, key, "author-1"); err != nil {
		t.Fatal(err)
	}
	var seen *Package
	check := func(_ context.Context, p *Package) error {
		seen = p
		if strings.Contains(string(p.Source()), "evil") {
			return errors.New("never")
		}
		return errors.Join(ErrBeyondContract, errors.New("capability.star reaches fetch beyond the contract"))
	}
	if _, err := ReadPackage(ctx, dir, &PackageOptions{Keys: keys, Check: check}); !errors.Is(err, ErrBeyondContract) || seen == nil || seen.Signer != "author-1" {
		t.Errorf("a refusing check = %v (saw %+v), want ErrBeyondContract", err, seen)
	}

	// Ed25519 keys sign too.
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	if err := SignPackage(dir, priv, "author-2"); err != nil {
		t.Fatal(err)
	}
	edKeys := &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "author-2"}}}
	if p, err := ReadPackage(ctx, dir, &PackageOptions{Keys: edKeys}); err != nil || p.Signer != "author-2" {
		t.Errorf("an Ed25519 signature: %v", err)
	}
	small, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err := SignPackage(dir, small, "x"); err == nil {
		t.Error("SignPackage with a P-384 key")
	}

	malformed := map[string]map[string]string{
		"no manifest":      {"capability.star": "x"},
		"a missing source": {"manifest.json": testManifest, "test.star": "", "README.md": ""},
		"an unknown key":   {"manifest.json": strings.Replace(testManifest, `"runtime"`, `"entry": "x", "runtime"`, 1), "capability.star": "", "test.star": ""},
		"a key of the wrong case": {"manifest.json": strings.Replace(testManifest, `"name": "weather"`, `"Name": "weather"`, 1),
			"capability.star": "", "test.star": ""},
		"a duplicate key": {"manifest.json": strings.Replace(testManifest, `"name": "weather",`, `"name": "weather", "name": "rain",`, 1),
			"capability.star": "", "test.star": ""},
		"a bad schema": {"manifest.json": strings.Replace(testManifest, `"required": ["place"]`, `"required": ["place"], "pattern": "x"`, 1),
			"capability.star": "", "test.star": ""},
		"a looser recommendation": {"manifest.json": strings.Replace(testManifest, `"recommended": "call-by-call"`, `"recommended": "pre-approved"`, 1),
			"capability.star": "", "test.star": ""},
	}
	for name, files := range malformed {
		if _, err := ReadPackage(ctx, writePackage(t, files), &PackageOptions{AllowUnsigned: true}); err == nil {
			t.Errorf("%s: ReadPackage accepted it", name)
		}
	}

	// Symbolic links, and too much.
	linked := weatherPackage(t)
	if err := os.Symlink("/etc/passwd", filepath.Join(linked, "passwd")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPackage(ctx, linked, &PackageOptions{AllowUnsigned: true}); !errors.Is(err, ErrBadPackage) {
		t.Errorf("a symbolic link = %v, want ErrBadPackage", err)
	}
	if _, err := ReadPackage(ctx, weatherPackage(t), &PackageOptions{AllowUnsigned: true, MaxFiles: 3}); !errors.Is(err, ErrBadPackage) {
		t.Errorf("too many files = %v, want ErrBadPackage", err)
	}
	if _, err := ReadPackage(ctx, weatherPackage(t), &PackageOptions{AllowUnsigned: true, MaxBytes: 100}); !errors.Is(err, ErrBadPackage) {
		t.Errorf("too many bytes = %v, want ErrBadPackage", err)
	}
}

// A verified package is offered through the catalog and made, at install, by its runtime.
func TestPackageOffer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p, err := ReadPackage(ctx, weatherPackage(t), &PackageOptions{AllowUnsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	var made string
	run := func(_ context.Context, p *Package, env Env) (*Capability, error) {
		made = env.Principal
		return New(Description{Name: p.Manifest.Name, Methods: p.Manifest.Methods, Contract: p.Manifest.Contract},
			Funcs{"at": func(_ context.Context, c *Call) (any, error) { return "sunny", nil }})
	}
	cat := NewCatalog()
	if err := cat.Add(p.Offer(Strategy{}, run)); err != nil {
		t.Fatal(err)
	}
	s := NewSet(&SetOptions{Principal: "alice", Catalog: cat})
	defer s.Close()
	if _, err := loaderCall(ctx, s, OriginUser, "install", `{"name":"weather"}`, ""); err != nil {
		t.Fatal(err)
	}
	if made != "alice" {
		t.Errorf("the runtime made it for %q", made)
	}
	// call-by-call, as recommended: the user approves each call.
	_, err = s.Call(ctx, Request{Capability: "weather", Method: "at", Args: []byte(`{"place":"Paris"}`)})
	if !errors.Is(err, ErrApprovalRequired) {
		t.Errorf("a call = %v, want ErrApprovalRequired", err)
	}
}
