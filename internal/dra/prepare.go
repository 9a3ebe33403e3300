package dra

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpunode/gpunode/internal/cdispec"
)

// ClaimRef names a claim to unprepare: the kubelet gives no more (the claim may be gone).
type ClaimRef struct {
	UID       types.UID
	Namespace string
	Name      string
}

// Preparer prepares and unprepares claims against the node's current devices. Calls are
// serialised (the kubelet plugin helper serialises them too, across pods during a rolling
// update); the state between calls lives only in the checkpoint.
type Preparer struct {
	// Dir holds the checkpoint (the plugin's data folder); CDIDir the claims' specs.
	Dir, CDIDir string
	// Pool is the pool the node's devices are published in (the node's name).
	Pool string
	// Current is the node's devices and spec now: the latest published inventory and the
	// node's CDI spec.
	Current func(ctx context.Context) (Inventory, *specs.Spec, error)
	Log     *slog.Logger

	mu sync.Mutex
}

// Result is one claim's outcome: its devices, or why it could not be prepared.
type Result struct {
	Devices []PreparedDevice
	Err     error
}

// Prepare prepares each claim: a claim already in the checkpoint gets its devices again
// (and its spec rewritten if it went missing); a new one is checked (devices known, no
// opaque configuration, no device held by another claim unless with admin access), its
// CDI spec written, and it is added to the checkpoint. The error is for the whole call
// (the checkpoint cannot be read or written); per-claim problems are in the results.
func (p *Preparer) Prepare(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cp, err := readCheckpoint(p.Dir)
	if err != nil {
		return nil, err
	}
	inv, base, curErr := p.Current(ctx)
	out := make(map[types.UID]Result, len(claims))
	var added []string
	for _, c := range claims {
		uid := string(c.UID)
		if pc, ok := cp.Claims[uid]; ok {
			out[c.UID] = Result{Devices: pc.Devices, Err: p.ensureSpec(base, curErr, uid, pc.Devices)}
			continue
		}
		if curErr != nil {
			out[c.UID] = Result{Err: fmt.Errorf("claim %s/%s: the node's GPUs cannot be read: %w", c.Namespace, c.Name, curErr)}
			continue
		}
		devs, err := p.resolve(c, inv, cp)
		if err == nil && len(devs) > 0 { // a claim with none of this driver's devices needs no spec
			err = p.writeSpec(base, uid, devs)
		}
		if err != nil {
			out[c.UID] = Result{Err: err}
			continue
		}
		cp.Claims[uid] = PreparedClaim{Namespace: c.Namespace, Name: c.Name, Devices: devs}
		added = append(added, uid)
		out[c.UID] = Result{Devices: devs}
	}
	if len(added) > 0 {
		if err := cp.write(p.Dir); err != nil {
			for _, uid := range added {
				_ = cdispec.RemoveClaim(p.CDIDir, uid)
			}
			return nil, err
		}
	}
	return out, nil
}

// Unprepare removes each claim's spec and its checkpoint entry; a claim not prepared is
// not an error (the kubelet may ask again).
func (p *Preparer) Unprepare(_ context.Context, claims []ClaimRef) (map[types.UID]error, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cp, err := readCheckpoint(p.Dir)
	if err != nil {
		return nil, err
	}
	out := make(map[types.UID]error, len(claims))
	changed := false
	for _, c := range claims {
		out[c.UID] = cdispec.RemoveClaim(p.CDIDir, string(c.UID))
		if _, ok := cp.Claims[string(c.UID)]; ok && out[c.UID] == nil {
			delete(cp.Claims, string(c.UID))
			changed = true
		}
	}
	if changed {
		if err := cp.write(p.Dir); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Clean removes the claims' specs that no checkpointed claim owns: those of a Prepare cut
// short before its checkpoint was written (the kubelet asks again, and gets a new spec).
func (p *Preparer) Clean() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	cp, err := readCheckpoint(p.Dir)
	if err != nil {
		return err
	}
	uids, err := cdispec.ClaimUIDs(p.CDIDir)
	if err != nil {
		return err
	}
	var errs []error
	for _, uid := range uids {
		if _, ok := cp.Claims[uid]; !ok {
			if p.Log != nil {
				p.Log.Info("dra: removing the spec of a claim not prepared", "claim", uid)
			}
			errs = append(errs, cdispec.RemoveClaim(p.CDIDir, uid))
		}
	}
	return errors.Join(errs...)
}

// resolve checks a new claim's allocation against the node's devices and the checkpoint.
func (p *Preparer) resolve(c *resourceapi.ResourceClaim, inv Inventory, cp *Checkpoint) ([]PreparedDevice, error) {
	ref := c.Namespace + "/" + c.Name
	if c.Status.Allocation == nil {
		return nil, fmt.Errorf("claim %s is not allocated", ref)
	}
	for _, cfg := range c.Status.Allocation.Devices.Config {
		if cfg.Opaque != nil && cfg.Opaque.Driver == DriverName {
			return nil, fmt.Errorf("claim %s: opaque configuration for %s (requests %v) is not supported: this driver takes no configuration", ref, DriverName, cfg.Requests)
		}
	}
	var devs []PreparedDevice
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != DriverName {
			continue
		}
		if r.Pool != p.Pool {
			return nil, fmt.Errorf("claim %s: request %s: device %s is in pool %q, not this node's pool %q", ref, r.Request, r.Device, r.Pool, p.Pool)
		}
		e, ok := inv.Entries[r.Device]
		if !ok {
			return nil, fmt.Errorf("claim %s: request %s: device %q is not one of this node's devices", ref, r.Request, r.Device)
		}
		d := PreparedDevice{Requests: []string{r.Request}, Pool: r.Pool, Device: r.Device, UUID: e.UUID, Parent: e.Parent,
			AdminAccess: r.AdminAccess != nil && *r.AdminAccess,
			CDIDevices:  []string{cdispec.ClaimDeviceID(string(c.UID), r.Device)}}
		if !d.AdminAccess {
			if h := cp.holder(string(c.UID), d); h != "" {
				return nil, fmt.Errorf("claim %s: request %s: device %s is already prepared for claim %s; it is not shared (only an admin-access claim may see it too)", ref, r.Request, r.Device, h)
			}
			for _, mine := range devs {
				if !mine.AdminAccess && (mine.UUID == d.UUID || mine.UUID == d.Parent || mine.Parent == d.UUID) {
					return nil, fmt.Errorf("claim %s: request %s: device %s overlaps device %s of the same claim", ref, r.Request, r.Device, mine.Device)
				}
			}
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// writeSpec writes the claim's CDI spec from the node's spec.
func (p *Preparer) writeSpec(base *specs.Spec, uid string, devs []PreparedDevice) error {
	cds := make([]cdispec.ClaimDevice, 0, len(devs))
	for _, d := range devs {
		cds = append(cds, cdispec.ClaimDevice{Name: d.Device, NodeName: d.UUID})
	}
	s, err := cdispec.ClaimSpec(base, uid, cds)
	if err != nil {
		return err
	}
	_, err = cdispec.WriteClaim(p.CDIDir, uid, s)
	return err
}

// ensureSpec rewrites a prepared claim's spec when its file is gone (a cleaned CDI folder).
func (p *Preparer) ensureSpec(base *specs.Spec, curErr error, uid string, devs []PreparedDevice) error {
	if len(devs) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(p.CDIDir, cdispec.ClaimFileName(uid))); err == nil {
		return nil
	}
	if curErr != nil {
		return fmt.Errorf("claim %s: its CDI spec is gone and the node's GPUs cannot be read: %w", uid, curErr)
	}
	return p.writeSpec(base, uid, devs)
}
