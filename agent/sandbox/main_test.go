package sandbox_test

import (
	"os"
	"testing"

	"github.com/a2awebcap/a2awebcap/agent/sandbox"
)

// TestMain makes the test binary a worker when a pool re-executes it.
func TestMain(m *testing.M) {
	sandbox.WorkerMain()
	os.Exit(m.Run())
}
