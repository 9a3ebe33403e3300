// Command gpunode takes GPU nodes from "joined the cluster" to "ready for production AI".
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpunode/gpunode/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
