// Command gen writes catalog_gen.go from catalog.tsv (run by `go generate ./internal/xid/`).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/gpunode/gpunode/internal/xid/internal/catalogfile"
)

func main() {
	in := flag.String("in", "catalog.tsv", "catalog table to read")
	out := flag.String("out", "catalog_gen.go", "Go file to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("read catalog: %w", err)
	}
	rows, err := catalogfile.Parse(bytes.NewReader(data), in)
	if err != nil {
		return err
	}
	src, err := catalogfile.Render(rows)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}
