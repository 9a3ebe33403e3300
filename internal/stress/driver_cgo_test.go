//go:build cgo

package stress

import (
	"errors"
	"testing"
)

func TestLoadLibraryMissingIsErrNoCUDA(t *testing.T) {
	err := loadLibrary("libcuda-gpunode-missing.so.1")
	if !errors.Is(err, ErrNoCUDA) {
		t.Fatalf("err = %v, want ErrNoCUDA", err)
	}
	if got, want := ErrNoCUDA.Error(), "CUDA driver not found (libcuda.so.1)"; got != want {
		t.Fatalf("ErrNoCUDA = %q, want %q", got, want)
	}
}
