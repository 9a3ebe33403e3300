// Package frameworks is acceptance layer L5, "real frameworks": a Python
// script embedded in the binary runs PyTorch on every local GPU (allocation, a checked
// matmul, an NCCL all-reduce across the GPUs, a checkpoint round trip) and reports JSON,
// parsed here into typed results. Without python3 or without torch the layer is
// unavailable, with the reason.
package frameworks

import (
	_ "embed"
	"errors"
	"fmt"
)

// Script is the embedded PyTorch acceptance script (check_torch.py).
//
//go:embed check_torch.py
var Script []byte

// ScriptName is the file name the script is written under (and runs as: the all-reduce
// test spawns processes that import it by path).
const ScriptName = "check_torch.py"

// Schema is the version of the script's JSON.
const Schema = "gpunode.dev/frameworks/v1"

// Errors that make the layer unavailable rather than failed (the checks skip with them).
var (
	// ErrNoPython: no python3 interpreter could be started.
	ErrNoPython = errors.New("python3 not found")
	// ErrNoTorch: python3 runs but cannot import torch.
	ErrNoTorch = errors.New("PyTorch (torch) not importable")
	// ErrNoCUDA: torch imports but sees no CUDA GPU.
	ErrNoCUDA = errors.New("PyTorch sees no CUDA GPU")
	// ErrNotRun: the caller chose not to run the script (simulated GPUs); wrap it with why.
	ErrNotRun = errors.New("frameworks layer not run")
)

// Status of one test.
type Status string

// Test statuses, as the script writes them.
const (
	StatusPass Status = "pass"
	StatusFail Status = "fail"
	StatusSkip Status = "skip"
)

// Test names, as the script writes them.
const (
	TestAllocate   = "allocate"
	TestMatmul     = "matmul"
	TestAllReduce  = "all-reduce"
	TestCheckpoint = "checkpoint"
)

// Tests lists the tests the script runs, in order.
var Tests = []string{TestAllocate, TestMatmul, TestAllReduce, TestCheckpoint}

// Report is the script's output.
type Report struct {
	Schema string `json:"schema"`
	Python string `json:"python"`
	Torch  string `json:"torch,omitempty"`
	CUDA   string `json:"cuda,omitempty"`
	NCCL   string `json:"nccl,omitempty"`
	// GPUs are the device names torch sees, by CUDA ordinal.
	GPUs []string `json:"gpus,omitempty"`
	// Unavailable is "torch" or "cuda" when the tests could not run; Reason says why.
	Unavailable string `json:"unavailable,omitempty"`
	Reason      string `json:"reason,omitempty"`
	Tests       []Test `json:"tests,omitempty"`
	// Seconds is the wall time of the whole script, measured by the caller.
	Seconds float64 `json:"seconds"`
	// Stderr is the script's diagnostics, trimmed to its last lines.
	Stderr string `json:"stderr,omitempty"`
}

// Test is one test's outcome.
type Test struct {
	Name    string             `json:"name"`
	Status  Status             `json:"status"`
	Message string             `json:"message"`
	Seconds float64            `json:"seconds"`
	GPUs    []GPUTest          `json:"gpus,omitempty"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// GPUTest is one GPU's part of a test.
type GPUTest struct {
	Index     int     `json:"index"`
	Status    Status  `json:"status"`
	Message   string  `json:"message"`
	TFLOPs    float64 `json:"tflops,omitempty"`
	BusBWGBps float64 `json:"busbwGBps,omitempty"`
}

// Find returns the named test; nil when the report has none by that name.
func (r *Report) Find(name string) *Test {
	if r == nil {
		return nil
	}
	for i := range r.Tests {
		if r.Tests[i].Name == name {
			return &r.Tests[i]
		}
	}
	return nil
}

// validate checks what the script wrote: the schema, and every test's name and status.
func (r *Report) validate() error {
	if r.Schema != Schema {
		return fmt.Errorf("schema %q, want %q", r.Schema, Schema)
	}
	if r.Unavailable != "" {
		if r.Unavailable != "torch" && r.Unavailable != "cuda" {
			return fmt.Errorf("unavailable %q, want torch or cuda", r.Unavailable)
		}
		return nil
	}
	if len(r.Tests) == 0 {
		return errors.New("no tests in the report")
	}
	for i, t := range r.Tests {
		switch t.Status {
		case StatusPass, StatusFail, StatusSkip:
		default:
			return fmt.Errorf("tests[%d] (%q): status %q, want pass, fail or skip", i, t.Name, t.Status)
		}
		if t.Name == "" || t.Message == "" {
			return fmt.Errorf("tests[%d]: a test needs a name and a message", i)
		}
	}
	return nil
}
