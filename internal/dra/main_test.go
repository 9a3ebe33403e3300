package dra_test

import (
	"os"
	"testing"

	"github.com/gpunode/gpunode/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
