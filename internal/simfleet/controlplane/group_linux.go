//go:build linux

package controlplane

import (
	"os/exec"
	"syscall"
)

// ownGroup puts the child in a new process group, so that a terminal's Ctrl-C reaches
// only this process (which stops the child in order), and makes it die with this
// process, so that a killed fleet leaves no API server behind.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
