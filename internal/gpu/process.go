package gpu

import "context"

// Process is a process that holds a context on a GPU.
type Process struct {
	PID uint32 `json:"pid"`
	// UsedMemoryBytes is the GPU memory it holds; 0 when the driver does not say.
	UsedMemoryBytes uint64 `json:"usedMemoryBytes,omitempty"`
	// Kind is "compute" or "graphics".
	Kind string `json:"kind"`
}

// ProcessLister is implemented by backends that can tell which processes use a GPU (a
// GPU reset is refused while any does).
type ProcessLister interface {
	// Processes lists the processes on the GPU with uuid; an unknown UUID is an error.
	Processes(ctx context.Context, uuid string) ([]Process, error)
}
