package web_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/a2awebcap/a2awebcap/web"
)

// The vendored module is npm capnweb's dist/index.js byte for byte, at the version the interop
// tests pin: when `make npm` has installed it (CI always does), the two files are compared.
func TestVendoredModuleIsNPMs(t *testing.T) {
	t.Parallel()
	embedded, err := fs.ReadFile(web.Files(), web.ModulePath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(web.Files(), "vendor/LICENSE.txt"); err != nil {
		t.Errorf("the module's licence is not shipped with it: %v", err)
	}
	pkg := filepath.Join("..", "interop", "node_modules", "capnweb")
	npm, err := os.ReadFile(filepath.Join(pkg, "dist", "index.js"))
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI runs make npm first: %v", err)
		}
		t.Skipf("npm capnweb is not installed (make npm): %v", err)
	}
	var meta struct{ Version string }
	if b, err := os.ReadFile(filepath.Join(pkg, "package.json")); err != nil || json.Unmarshal(b, &meta) != nil {
		t.Fatalf("reading npm capnweb's package.json: %v", err)
	}
	if meta.Version != web.CapnwebVersion {
		t.Errorf("interop pins capnweb %s, the vendored module is %s: vendor the new dist/index.js", meta.Version, web.CapnwebVersion)
	}
	if !bytes.Equal(embedded, npm) {
		t.Errorf("web/%s differs from npm capnweb@%s's dist/index.js: copy it again, byte for byte", web.ModulePath, meta.Version)
	}
	lock, err := os.ReadFile(filepath.Join("..", "interop", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`"node_modules/capnweb":\s*\{\s*"version":\s*"` + regexp.QuoteMeta(web.CapnwebVersion) + `"`).Match(lock) {
		t.Errorf("interop/package-lock.json does not pin capnweb %s", web.CapnwebVersion)
	}
}

// Without its script (blocked, or still loading), the page's form submits nothing: it posts,
// and none of its fields has a name, so the token can never land in a URL.
func TestFormSubmitsNothingWithoutScript(t *testing.T) {
	t.Parallel()
	page, err := fs.ReadFile(web.Files(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	forms := regexp.MustCompile(`(?s)<form\b([^>]*)>(.*?)</form>`).FindAllSubmatch(page, -1)
	if len(forms) == 0 {
		t.Fatal("index.html has no form")
	}
	for _, f := range forms {
		if !regexp.MustCompile(`\bmethod="post"`).Match(f[1]) {
			t.Errorf("form %s does not post", f[1])
		}
		for _, field := range regexp.MustCompile(`<(?:input|textarea|select|button)\b[^>]*>`).FindAll(f[2], -1) {
			if strings.Contains(string(field), " name=") {
				t.Errorf("field %s has a name: without the script it would be submitted", field)
			}
		}
	}
}
