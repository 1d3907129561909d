package adbtest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd's process if the test process dies
// first (a test binary killed at its timeout runs no cleanup).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
