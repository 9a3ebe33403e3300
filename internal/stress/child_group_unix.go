//go:build unix && !linux

package stress

import (
	"os/exec"
	"syscall"
)

// ownGroup puts the child in a new process group, so that killing the group
// ends whatever it started, and a terminal's Ctrl-C reaches only the parent.
func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// killGroup sends SIGKILL to the child's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
