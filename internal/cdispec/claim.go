package cdispec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpunode/gpunode/internal/atomicfile"
	hostcdi "github.com/gpunode/gpunode/internal/host/cdi"
)

// ClaimKind is the CDI kind of the devices prepared for DRA claims: one spec per claim,
// its devices named "<claim UID>-<DRA device name>", so a name is never reused by another
// claim (a runtime's cached spec cannot be mistaken for a newer one).
const ClaimKind = "gpu.gpunode.dev/claim"

// claimPrefix starts the file name of every claim's spec; RemoveStale leaves them alone.
const claimPrefix = ownerPrefix + "claim-"

// ClaimDevice is one device of a claim: its DRA name and the name of its device in the
// node's spec (Build's: the GPU's or MIG device's UUID).
type ClaimDevice struct {
	Name     string
	NodeName string
}

// ClaimSpec is the spec of one claim's devices, cut from the node's spec base: each
// device's own edits (its nodes and environment) and base's common edits (control nodes,
// libraries, binaries, the ld.so cache hook). It is validated with the CDI library.
func ClaimSpec(base *specs.Spec, claimUID string, devs []ClaimDevice) (*specs.Spec, error) {
	if claimUID == "" || strings.ContainsAny(claimUID, "/\\") {
		return nil, fmt.Errorf("cdi claim spec: claim UID %q is not a file name", claimUID)
	}
	s := &specs.Spec{Kind: ClaimKind, ContainerEdits: cloneAll(base.ContainerEdits)}
	for _, d := range devs {
		i := slices.IndexFunc(base.Devices, func(b specs.Device) bool { return b.Name == d.NodeName })
		if i < 0 {
			return nil, fmt.Errorf("cdi claim spec: claim %s: device %s (%s) is not in the node's spec", claimUID, d.Name, d.NodeName)
		}
		s.Devices = append(s.Devices, specs.Device{Name: ClaimDeviceName(claimUID, d.Name), ContainerEdits: cloneAll(base.Devices[i].ContainerEdits)})
	}
	v, err := specs.MinimumRequiredVersion(s)
	if err != nil {
		return nil, fmt.Errorf("cdi claim spec: version: %w", err)
	}
	s.Version = v
	if err := hostcdi.Validate(s); err != nil {
		return nil, fmt.Errorf("cdi spec of claim %s is invalid: %w", claimUID, err)
	}
	return s, nil
}

// ClaimDeviceName is the CDI device name of a claim's device.
func ClaimDeviceName(claimUID, device string) string { return claimUID + "-" + device }

// ClaimDeviceID is the fully qualified CDI device ID the runtime is given,
// "gpu.gpunode.dev/claim=<claim UID>-<device>".
func ClaimDeviceID(claimUID, device string) string {
	return ClaimKind + "=" + ClaimDeviceName(claimUID, device)
}

// ClaimFileName is the file of a claim's spec: "gpunode-claim-<uid>.json".
func ClaimFileName(claimUID string) string { return claimPrefix + claimUID + ".json" }

// WriteClaim writes a claim's spec into dir atomically and reads it back through the CDI
// library, as Write does; other files are left alone. It returns the file's path.
func WriteClaim(dir, claimUID string, s *specs.Spec) (string, error) {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return "", fmt.Errorf("cdi spec of claim %s: encode: %w", claimUID, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cdi spec: create %s: %w", dir, err)
	}
	path := filepath.Join(dir, ClaimFileName(claimUID))
	if err := atomicfile.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("cdi spec of claim %s: %w", claimUID, err)
	}
	if _, err := cdiapi.ReadSpec(path, 0); err != nil {
		return path, fmt.Errorf("cdi spec: %s written but the CDI library refuses it: %w", path, err)
	}
	return path, nil
}

// RemoveClaim removes a claim's spec; a spec that is not there is not an error.
func RemoveClaim(dir, claimUID string) error {
	err := os.Remove(filepath.Join(dir, ClaimFileName(claimUID)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cdi spec of claim %s: remove: %w", claimUID, err)
	}
	return nil
}

// ClaimUIDs lists the claims whose spec is in dir, sorted.
func ClaimUIDs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cdi spec: list %s: %w", dir, err)
	}
	var uids []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), claimPrefix)
		if uid, json := strings.CutSuffix(rest, ".json"); ok && json && uid != "" && !e.IsDir() {
			uids = append(uids, uid)
		}
	}
	return uids, nil
}

// cloneAll copies edits deeply enough that changing the copy changes nothing in e.
func cloneAll(e specs.ContainerEdits) specs.ContainerEdits {
	out := cloneEdits(e)
	for _, m := range e.Mounts {
		c := *m
		c.Options = slices.Clone(m.Options)
		out.Mounts = append(out.Mounts, &c)
	}
	for _, h := range e.Hooks {
		c := *h
		c.Args = slices.Clone(h.Args)
		out.Hooks = append(out.Hooks, &c)
	}
	return out
}
