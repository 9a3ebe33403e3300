//go:build !cgo

package stress

import "context"

// InjectFault needs cgo; this build has none, so it always wraps ErrNoCUDA.
func InjectFault(context.Context, int, string) error { return errNoCgo }
