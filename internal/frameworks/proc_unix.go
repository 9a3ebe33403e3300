//go:build unix

package frameworks

import (
	"os/exec"
	"syscall"
)

// killGroup runs the script in a process group of its own and, on cancel, kills the whole
// group: the all-reduce test's worker processes go with the script.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
