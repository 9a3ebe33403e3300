package yamlfile_test

import (
	"errors"
	"fmt"

	"github.com/gpunode/gpunode/internal/yamlfile"
)

// A loader decodes strictly, then reports its own checks at the line of the key at fault.
func Example() {
	var cfg struct {
		Version  string `yaml:"version"`
		Replicas int    `yaml:"replicas"`
	}
	data := []byte("version: v1\nreplicas: 0\n")
	doc, err := yamlfile.Decode("dp.yaml", data, &cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	if cfg.Replicas < 1 {
		fmt.Println(&yamlfile.Error{File: "dp.yaml", Line: yamlfile.KeyLine(doc, "replicas"), Field: "replicas", Msg: "replicas 0: want at least 1"})
	}

	_, err = yamlfile.Decode("dp.yaml", []byte("version: v1\nreplica: 2\n"), &cfg)
	var e *yamlfile.Error
	if errors.As(err, &e) {
		fmt.Println(err, "| field:", e.Field)
	}
	// Output:
	// dp.yaml:2: replicas 0: want at least 1
	// dp.yaml:2: unknown field "replica" | field: replica
}
