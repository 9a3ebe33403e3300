package nodepolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/record"
	"github.com/gpunode/gpunode/internal/rules"
)

// AcceptPolicy is the one converter from a GPUNodePolicy to the acceptance engine's policy
// for a node of accelerator class class, used by the agent (the policy that governs its
// node) and by `gpunode accept --policy FILE`: accept.DefaultPolicy overridden by every field
// the policy sets, with the hardware expectation of the class (none listed: only
// consistency is checked). Layers the node cannot run (those of the controller) are left to
// the controller; the node runs the others, the on-demand ones (performance, frameworks)
// included. A nil policy, or BuiltIn (no GPUNodePolicy selects the node), gives
// accept.DefaultPolicy itself, named as `gpunode accept` without --policy names it. The
// reference names the policy and hashes the effective policy.
func AcceptPolicy(gp *v1alpha1.GPUNodePolicy, class string) (accept.Policy, record.PolicyRef) {
	p := accept.DefaultPolicy()
	ref := record.PolicyRef{Name: p.Name, Source: "built-in"}
	if gp != nil && !IsBuiltIn(gp) {
		p.Name = gp.Name
		ref = record.PolicyRef{Name: gp.Name, Source: "GPUNodePolicy/" + gp.Name}
		s := gp.Spec
		for _, l := range s.Acceptance.Layers {
			if nodeLayer(l) {
				p.Layers = append(p.Layers, accept.Layer(l))
			}
		}
		for _, c := range s.Classes {
			if c.Class == class {
				expect(&p.Expect, c)
			}
		}
		p.Versions = accept.Versions{Driver: s.Versions.Driver, CUDA: s.Versions.CUDA, Kernel: s.Versions.Kernel, Containerd: s.Versions.Containerd}
		thresholds(&p.Thresholds, s.Acceptance.Thresholds)
		hostPolicy(&p.Host, s.Acceptance.Host)
	}
	ref.SHA256 = Hash(p)
	return p, ref
}

// Hash is the SHA-256 of an effective acceptance policy, as records carry it.
func Hash(p accept.Policy) string {
	b, _ := json.Marshal(p)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Thresholds is the thresholds table of a policy (nil or BuiltIn: the defaults): what the
// acceptance engine and the health monitor both judge by.
func Thresholds(gp *v1alpha1.GPUNodePolicy) rules.Thresholds {
	t := rules.DefaultThresholds()
	if gp != nil && !IsBuiltIn(gp) {
		thresholds(&t, gp.Spec.Acceptance.Thresholds)
	}
	return t
}

// nodeLayer reports whether a node runs layer l itself.
func nodeLayer(l v1alpha1.Layer) bool {
	return slices.Contains(accept.NodeLocalLayers, accept.Layer(l)) || slices.Contains(accept.OnDemandLayers, accept.Layer(l))
}

func expect(e *accept.Expect, c v1alpha1.ClassExpectation) {
	e.GPUs = int(c.GPUs)
	e.Model = c.Model
	e.MinMemoryMiB = uint64(max(c.MinMemoryMiB, 0))
	e.NVLinksPerGPU = int(c.NVLinksPerGPU)
	e.PCIeGen, e.PCIeWidth = int(c.PCIeGen), int(c.PCIeWidth)
	setPtr(&e.ECC, c.ECC)
	setPtr(&e.PersistenceMode, c.PersistenceMode)
	setString(&e.MIG, c.MIG)
	setString(&e.Fabric, c.Fabric)
}

func thresholds(t *rules.Thresholds, in v1alpha1.Thresholds) {
	if in.MaxTemperatureC != nil {
		t.MaxTemperatureC = int(*in.MaxTemperatureC)
	}
	if in.MaxPCIeReplays != nil {
		t.MaxPCIeReplays = uint64(max(*in.MaxPCIeReplays, 0))
	}
	if in.MaxCorrectedECC != nil {
		t.MaxCorrectedECC = uint64(max(*in.MaxCorrectedECC, 0))
	}
	if in.MaxRetiredPages != nil {
		t.MaxRetiredPages = int(*in.MaxRetiredPages)
	}
	if in.MaxCorrectableRemappedRows != nil {
		t.MaxCorrectableRemappedRows = int(*in.MaxCorrectableRemappedRows)
	}
	if in.MaxPowerPercent != nil {
		t.MaxPowerPercent = int(*in.MaxPowerPercent)
	}
	if in.MinPerformancePercent != nil {
		t.MinPerformancePercent = int(*in.MinPerformancePercent)
	}
	if in.CorrectedECCPerMinute != nil {
		t.CorrectedECCPerMinute = uint64(max(*in.CorrectedECCPerMinute, 0))
	}
	if in.PCIeReplaysPerMinute != nil {
		t.PCIeReplaysPerMinute = uint64(max(*in.PCIeReplaysPerMinute, 0))
	}
	if in.IgnoreXIDs != nil {
		t.IgnoreXIDs = make([]int, len(in.IgnoreXIDs))
		for i, x := range in.IgnoreXIDs {
			t.IgnoreXIDs[i] = int(x)
		}
	}
}

func hostPolicy(h *accept.HostPolicy, in v1alpha1.HostPolicy) {
	setString(&h.IOMMU, in.IOMMU)
	setString(&h.SecureBoot, in.SecureBoot)
	setString(&h.SMT, in.SMT)
	setString(&h.NVIDIARuntime, in.NVIDIARuntime)
	setString(&h.KubeletReservations, in.KubeletReservations)
	if in.CgroupVersion != nil {
		h.CgroupVersion = int(*in.CgroupVersion)
	}
	if in.MinShmMiB != nil {
		h.MinShmMiB = uint64(max(*in.MinShmMiB, 0))
	}
	if in.MinHugepages != nil {
		h.MinHugepages = int(*in.MinHugepages)
	}
	if in.MinFreePercent != nil {
		h.MinFreePercent = int(*in.MinFreePercent)
	}
	if in.MinFreeInodesPercent != nil {
		h.MinFreeInodesPercent = int(*in.MinFreeInodesPercent)
	}
	if in.CacheDirs != nil {
		h.CacheDirs = in.CacheDirs
	}
	setPtr(&h.TimeSync, in.TimeSync)
	setPtr(&h.GPUNUMALocal, in.GPUNUMALocal)
}

func setString(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

func setPtr(dst **bool, v *bool) {
	if v != nil {
		b := *v
		*dst = &b
	}
}
