package capability

// Capability packages: a directory with manifest.json, source, tests and a README, signed by a
// detached JWS over the canonical manifest and the digests of every other file.

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/a2awebcap/a2awebcap/internal/jcs"
)

// The files of a package with a meaning of their own.
const (
	ManifestFile  = "manifest.json"
	SignatureFile = "signature.jws"
)

// PackageAlgorithms are the JWS algorithms a package signature may use: never "none" or an
// HMAC (whoever can verify those can sign).
var PackageAlgorithms = []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.EdDSA, jose.RS256, jose.PS256}

// The errors of reading a package.
var (
	// ErrUnsigned: the package has no signature, and unsigned packages are not accepted.
	ErrUnsigned = errors.New("capability: package is not signed")
	// ErrSignature: the signature does not verify with a trusted key: the package was changed
	// after signing (tampered), or signed by a key not trusted.
	ErrSignature = errors.New("capability: package signature does not verify")
	// ErrBadPackage: the package is malformed: no manifest, a file it names missing, a symbolic
	// link, too many or too large files.
	ErrBadPackage = errors.New("capability: bad package")
	// ErrBeyondContract: the package check found code that reaches beyond the manifest's
	// contract. Package checks (PackageOptions.Check) wrap it.
	ErrBeyondContract = errors.New("capability: package code reaches beyond its contract")
)

// Package is a capability package, read and verified.
type Package struct {
	// Dir is the directory it was read from.
	Dir      string
	Manifest Manifest
	// Files are its files, manifest.json included and signature.jws not, by slash path.
	Files map[string][]byte
	// Signer is the key ID ("kid") of the key whose signature verified; "" when unsigned.
	Signer string
}

// Source returns the manifest's source file's content.
func (p *Package) Source() []byte { return p.Files[p.Manifest.Source] }

// PackageOptions configure ReadPackage.
type PackageOptions struct {
	// Keys are the trusted signers' public keys: a package must be signed by one of them.
	Keys *jose.JSONWebKeySet
	// AllowUnsigned accepts a package without signature.jws (a bad signature is never
	// accepted). For development only.
	AllowUnsigned bool
	// Check is the package check hook, run after the signature verifies: it examines the
	// package's code against its manifest's contract and refuses (with an error wrapping
	// ErrBeyondContract) a package whose code could reach beyond it. The sandbox's static
	// check is one; nil means none.
	Check func(ctx context.Context, p *Package) error
	// MaxFiles bounds the files of a package; 0 means 64.
	MaxFiles int
	// MaxBytes bounds their total size; 0 means 4 MiB.
	MaxBytes int64
}

// ReadPackage reads the package in dir and verifies it: the manifest (ParseManifest), the
// files it names, the signature against opts.Keys, then opts.Check. It refuses symbolic links
// and anything but regular files and directories.
func ReadPackage(ctx context.Context, dir string, opts *PackageOptions) (*Package, error) {
	if opts == nil {
		opts = &PackageOptions{}
	}
	files, sig, err := readPackageFiles(dir, opts)
	if err != nil {
		return nil, err
	}
	mf, ok := files[ManifestFile]
	if !ok {
		return nil, fmt.Errorf("%w: %s: no %s", ErrBadPackage, dir, ManifestFile)
	}
	m, err := ParseManifest(mf)
	if err != nil {
		return nil, err
	}
	for _, f := range []string{m.Source, m.Tests} {
		if _, ok := files[f]; f != "" && !ok {
			return nil, fmt.Errorf("%w: %s: the manifest names %s, which is not there", ErrBadPackage, m.Name, f)
		}
	}
	p := &Package{Dir: dir, Manifest: m, Files: files}
	switch {
	case sig == nil && !opts.AllowUnsigned:
		return nil, fmt.Errorf("%w: %s", ErrUnsigned, m.Name)
	case sig != nil:
		if p.Signer, err = verifyPackage(files, sig, opts.Keys); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrSignature, m.Name, err)
		}
	}
	if opts.Check != nil {
		if err := opts.Check(ctx, p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// readPackageFiles reads every file under dir, and the signature apart.
func readPackageFiles(dir string, opts *PackageOptions) (map[string][]byte, []byte, error) {
	maxFiles, maxBytes := opts.MaxFiles, opts.MaxBytes
	if maxFiles <= 0 {
		maxFiles = 64
	}
	if maxBytes <= 0 {
		maxBytes = 4 << 20
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadPackage, err)
	}
	defer root.Close()
	files := map[string][]byte{}
	var sig []byte
	var total int64
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file (symbolic links are refused)", p)
		case !validPackagePath(p) && p != SignatureFile:
			return fmt.Errorf("%s: bad file name", p)
		case len(files) >= maxFiles:
			return fmt.Errorf("more than %d files", maxFiles)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if total += fi.Size(); total > maxBytes {
			return fmt.Errorf("more than %d bytes", maxBytes)
		}
		data, err := root.ReadFile(p)
		if err != nil {
			return err
		}
		if total += int64(len(data)) - fi.Size(); total > maxBytes { // it grew
			return fmt.Errorf("more than %d bytes", maxBytes)
		}
		if p == SignatureFile {
			sig = data
		} else {
			files[p] = data
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrBadPackage, dir, err)
	}
	return files, sig, nil
}

// validPackagePath reports whether p may name a file of a package: a clean relative slash
// path of printable characters.
func validPackagePath(p string) bool {
	return p != "" && len(p) <= 256 && path.Clean(p) == p && !path.IsAbs(p) && p != "." && p != SignatureFile &&
		!strings.HasPrefix(p, "../") && p != ".." &&
		!strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' })
}

// packagePayload is what a package signature signs: the canonical JSON of {"files": {path:
// "sha256:<hex>"}, "manifest": <the manifest>} over every file but the manifest.
func packagePayload(files map[string][]byte) ([]byte, error) {
	mf, err := jcs.Canonicalize(files[ManifestFile])
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadPackage, ManifestFile, err)
	}
	digests := map[string]string{}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if p != ManifestFile {
			sum := sha256.Sum256(files[p])
			digests[p] = "sha256:" + hex.EncodeToString(sum[:])
		}
	}
	raw, err := json.Marshal(map[string]any{"manifest": json.RawMessage(mf), "files": digests})
	if err != nil {
		return nil, err
	}
	return jcs.Canonicalize(raw)
}

// verifyPackage checks the detached compact JWS sig over files' payload against keys and
// returns the key ID that verified it.
func verifyPackage(files map[string][]byte, sig []byte, keys *jose.JSONWebKeySet) (string, error) {
	payload, err := packagePayload(files)
	if err != nil {
		return "", err
	}
	jws, err := jose.ParseDetached(strings.TrimSpace(string(sig)), payload, PackageAlgorithms)
	if err != nil {
		return "", errors.New("malformed, or an algorithm not accepted")
	}
	hdr := jws.Signatures[0].Protected
	var candidates []jose.JSONWebKey
	if keys != nil {
		if hdr.KeyID != "" {
			candidates = keys.Key(hdr.KeyID)
		} else {
			candidates = keys.Keys
		}
	}
	for _, k := range candidates {
		if !k.Valid() || (k.Use != "" && k.Use != "sig") || (k.Algorithm != "" && k.Algorithm != hdr.Algorithm) {
			continue
		}
		pub := k.Public()
		if pub.Key == nil { // a symmetric key
			continue
		}
		if jws.DetachedVerify(payload, pub) == nil {
			return k.KeyID, nil
		}
	}
	if len(candidates) == 0 {
		return "", fmt.Errorf("no trusted key %q", hdr.KeyID)
	}
	return "", errors.New("the package was changed after signing, or signed by another key")
}

// SignPackage signs the package in dir with key (an ECDSA P-256 key, ES256; an Ed25519 key,
// EdDSA; or an RSA key of at least 2048 bits, PS256), naming it kid, and writes
// signature.jws. Sign last: any later change to any file invalidates the signature.
func SignPackage(dir string, key crypto.Signer, kid string) error {
	var alg jose.SignatureAlgorithm
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return errors.New("capability: SignPackage: ECDSA keys must be P-256")
		}
		alg = jose.ES256
	case ed25519.PrivateKey:
		alg = jose.EdDSA
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return errors.New("capability: SignPackage: RSA keys must have at least 2048 bits")
		}
		alg = jose.PS256
	default:
		return fmt.Errorf("capability: SignPackage: unsupported key type %T", key)
	}
	files, _, err := readPackageFiles(dir, &PackageOptions{})
	if err != nil {
		return err
	}
	if _, err := ParseManifest(files[ManifestFile]); err != nil {
		return err
	}
	payload, err := packagePayload(files)
	if err != nil {
		return err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("a2awebcap-capability+jws"))
	if err != nil {
		return fmt.Errorf("capability: SignPackage: %w", err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return fmt.Errorf("capability: SignPackage: %w", err)
	}
	compact, err := jws.DetachedCompactSerialize()
	if err != nil {
		return fmt.Errorf("capability: SignPackage: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.WriteFile(SignatureFile, []byte(compact+"\n"), 0o644)
}

// Runtime makes a capability of a package for one holder: the sandbox is the runtime of
// "starlark" packages.
type Runtime func(ctx context.Context, p *Package, env Env) (*Capability, error)

// Offer offers p for a catalog, made by run for each holder, under the operator's default
// strategy (zero: the manifest's recommended one).
func (p *Package) Offer(strategy Strategy, run Runtime) Offer {
	return Offer{Manifest: p.Manifest, Strategy: strategy,
		New: func(ctx context.Context, env Env) (*Capability, error) { return run(ctx, p, env) }}
}
