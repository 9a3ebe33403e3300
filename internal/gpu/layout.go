package gpu

import "context"

// MIGLayout is which MIG devices each GPU has, by GPU index: what a consumer that publishes
// MIG devices (the DRA plugin) must see change within a second.
type MIGLayout []GPULayout

// GPULayout is one GPU's MIG layout.
type GPULayout struct {
	// UUID of the GPU ("" when it could not be read).
	UUID string `json:"uuid"`
	// MIG is whether MIG mode is on.
	MIG bool `json:"mig"`
	// Devices are the UUIDs of its MIG devices, in slot order.
	Devices []string `json:"devices,omitempty"`
}

// MIGLayoutSource is implemented by backends that can read the MIG layout alone, with a
// few calls per GPU rather than every fact of a Snapshot, so that it can be polled every
// second. A GPU that cannot be read is reported as far as it was read: a changed answer is
// a reason to take a Snapshot, never a fact to publish.
type MIGLayoutSource interface {
	MIGLayout(ctx context.Context) (MIGLayout, error)
}
