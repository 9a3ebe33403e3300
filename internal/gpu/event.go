package gpu

import (
	"context"
	"time"
)

// EventKind is what a device event reports.
type EventKind string

// Event kinds (NVML's critical XID, single/double-bit ECC, recovery-action and
// GPU-unavailable events, and a watcher's own report that a GPU stopped answering).
const (
	EventXID            EventKind = "xid"
	EventECCSingleBit   EventKind = "ecc-single-bit"
	EventECCDoubleBit   EventKind = "ecc-double-bit"
	EventRecoveryAction EventKind = "recovery-action"
	EventGPUUnavailable EventKind = "gpu-unavailable"
	EventGPULost        EventKind = "gpu-lost"
)

// Event is one asynchronous report from a device.
type Event struct {
	Time  time.Time `json:"time"`
	Kind  EventKind `json:"kind"`
	Index int       `json:"index"`
	UUID  string    `json:"uuid"`
	// XID is the error code of an EventXID.
	XID int `json:"xid,omitempty"`
	// Data is the event's raw data (for EventRecoveryAction the new action's number).
	Data uint64 `json:"data,omitempty"`
	// RecoveryAction is set for EventRecoveryAction.
	RecoveryAction RecoveryAction `json:"recoveryAction,omitempty"`
	// GPUInstance and ComputeInstance are the MIG instance, -1 when none.
	GPUInstance     int    `json:"gpuInstance"`
	ComputeInstance int    `json:"computeInstance"`
	Message         string `json:"message,omitempty"`
}

// EventSource is implemented by backends that can report device events as they happen.
type EventSource interface {
	// Watch delivers events until ctx ends, then closes the channel. A device that stops
	// answering is reported as an EventGPULost event, never as a crash or a hang; a source
	// that cannot watch at all returns an error (ErrNotSupported when the driver lacks events).
	Watch(ctx context.Context) (<-chan Event, error)
}
