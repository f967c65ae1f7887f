package harness

import (
	"log"
	"os"
	"runtime/pprof"
)

// StartCPUProfile starts a CPU profile into path ("": none) and returns its stop function, which
// writes the profile out.
func StartCPUProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			log.Print(err)
		}
	}
}
