//go:build !unix

package frameworks

import "os/exec"

// killGroup: without process groups, cancel kills the script alone (exec's default).
func killGroup(*exec.Cmd) {}
