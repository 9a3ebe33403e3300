package upgrade

import (
	"os"
	"testing"

	"github.com/gpunode/gpunode/internal/testenv"
)

// One API server for the package's integration tests, stopped after the last test.
func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
