// Package cdi reads the Container Device Interface spec files of a host and finds the stale
// ones: specs that name GPUs or device nodes this host no longer has (after
// device reconfiguration, stale specs give containers wrong device paths).
//
// Specs are parsed and validated with the CDI project's own library, so a file this package
// accepts is one the container runtime accepts too.
package cdi

import (
	"errors"
	"fmt"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// Parse parses and validates one spec file's bytes (YAML or JSON) as the CDI library's
// ReadSpec does, without touching the filesystem.
func Parse(data []byte) (*specs.Spec, error) {
	raw, err := cdiapi.ParseSpec(data)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, errors.New("no spec data")
	}
	if err := Validate(raw); err != nil {
		return raw, err
	}
	return raw, nil
}

// Validate checks a spec the way the CDI library does when it loads one: version, kind
// (vendor/class), container edits, device names and edits, unique names, at least one
// device. (The library's annotation checks are internal to it and are not repeated.)
func Validate(raw *specs.Spec) error {
	if err := specs.ValidateVersion(raw); err != nil {
		return err
	}
	vendor, class := parser.ParseQualifier(raw.Kind)
	if err := parser.ValidateVendorName(vendor); err != nil {
		return fmt.Errorf("kind %q: %w", raw.Kind, err)
	}
	if err := parser.ValidateClassName(class); err != nil {
		return fmt.Errorf("kind %q: %w", raw.Kind, err)
	}
	if err := (&cdiapi.ContainerEdits{ContainerEdits: &raw.ContainerEdits}).Validate(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i := range raw.Devices {
		d := &raw.Devices[i]
		if err := parser.ValidateDeviceName(d.Name); err != nil {
			return err
		}
		if emptyEdits(&d.ContainerEdits) {
			return fmt.Errorf("invalid device %q: empty device edits", d.Name)
		}
		if err := (&cdiapi.ContainerEdits{ContainerEdits: &d.ContainerEdits}).Validate(); err != nil {
			return fmt.Errorf("invalid device %q: %w", d.Name, err)
		}
		if seen[d.Name] {
			return fmt.Errorf("invalid spec, multiple device %q", d.Name)
		}
		seen[d.Name] = true
	}
	if len(raw.Devices) == 0 {
		return errors.New("invalid spec, no devices")
	}
	return nil
}

// emptyEdits reports whether edits change nothing (invalid for a device).
func emptyEdits(e *specs.ContainerEdits) bool {
	return len(e.Env) == 0 && len(e.DeviceNodes) == 0 && len(e.Hooks) == 0 &&
		len(e.Mounts) == 0 && len(e.AdditionalGIDs) == 0 && e.IntelRdt == nil &&
		len(e.NetDevices) == 0
}
