//go:build !linux

package host

import (
	"context"
	"errors"
)

var errNotLinux = errors.New("host facts need Linux")

func realStatfs(string) func(string) (StatFS, error) {
	return func(string) (StatFS, error) { return StatFS{}, errNotLinux }
}

func realExec(string) func(context.Context, string, ...string) ([]byte, error) {
	return func(context.Context, string, ...string) ([]byte, error) { return nil, errNotLinux }
}

func realClockSynced() (bool, error) { return false, errNotLinux }
