// Command cli-reference writes gpunode's command reference (docs/cli.md) from the commands
// themselves, atomically: go run ./hack/cli-reference docs/cli.md
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/gpunode/gpunode/internal/atomicfile"
	"github.com/gpunode/gpunode/internal/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: cli-reference FILE")
		os.Exit(2)
	}
	var b bytes.Buffer
	if err := cli.WriteReference(&b); err != nil {
		fmt.Fprintln(os.Stderr, "cli-reference:", err)
		os.Exit(1)
	}
	if err := atomicfile.WriteFile(os.Args[1], b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "cli-reference:", err)
		os.Exit(1)
	}
}
