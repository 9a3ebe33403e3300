package cli

import (
	"errors"
	"fmt"
)

// Exit codes, the same for every command.
const (
	ExitOK    = 0
	ExitFail  = 1 // the command ran and the node failed (acceptance failed, a GPU error)
	ExitUsage = 2 // bad usage or bad input: a flag, a policy or a scenario file
)

// exitError carries an exit code through cobra's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError marks bad usage or bad input (exit 2).
func usageError(err error) error { return &exitError{code: ExitUsage, err: err} }

// usageErrorf formats a usage error.
func usageErrorf(format string, args ...any) error { return usageError(fmt.Errorf(format, args...)) }

// silentFailure exits 1 without printing an error: the command already reported why.
var silentFailure = &exitError{code: ExitFail}

// exitCode maps an error to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitFail
}
