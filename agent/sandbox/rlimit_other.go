//go:build !linux

package sandbox

import (
	"errors"
	"os"
	"syscall"
	"time"
)

var sigXCPU []os.Signal

// enforceMemory fails: this platform has no address-space limit the sandbox relies on.
func enforceMemory(memory int64) error {
	return errors.New("sandbox: memory limits need Linux")
}

func limitCPU(time.Duration) func() { return func() {} }

func sysProcAttr() *syscall.SysProcAttr { return nil }
