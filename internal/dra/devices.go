// Package dra is the kubelet DRA plugin of the driver gpu.gpunode.dev: the node's GPUs (and
// MIG devices) published in a ResourceSlice with the health engine's verdicts as device
// taints, claims prepared into per-claim CDI specs and checkpointed on the host, and the
// same verdicts streamed to the kubelet's health service. It is the only importer of
// k8s.io/dynamic-resource-allocation.
package dra

import (
	"fmt"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/utils/ptr"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/health"
)

// The contract's names.
const (
	// DriverName is the DRA driver's name, its attribute domain and DeviceClass prefix.
	DriverName = v1alpha1.DRADriver
	// PluginDir is the plugin's data folder on the host: the DRA socket and the checkpoint.
	PluginDir = "/var/lib/kubelet/plugins/" + DriverName
	// RegistryDir is the kubelet's plugin registration folder.
	RegistryDir = "/var/lib/kubelet/plugins_registry"
	// TaintKey is the key of the device taints the plugin publishes from each GPU's health.
	TaintKey = DriverName + "/health"
	// GPUAPILabel on a Node picks the API the agent serves nvidia.com/gpu with there.
	GPUAPILabel = v1alpha1.LabelGPUAPI
	// TypeGPU and TypeMIG are the values of the "type" attribute.
	TypeGPU = "gpu"
	TypeMIG = "mig"
)

// maxString is the longest string attribute value the API accepts.
const maxString = 64

// Facts are what a slice is computed from: the GPUs, their health and the node's class.
type Facts struct {
	Snapshot *gpu.Snapshot
	// Health is each GPU's state by UUID; a GPU not in it is in service.
	Health map[string]health.State
	// Class is the accelerator class of a GPU ("" when unknown).
	Class func(*gpu.Device) string
	// PCIeRoot is the PCIe root complex of a bus ID (deviceattribute's form), false when
	// unknown.
	PCIeRoot func(busID string) (string, bool)
	// Evict: a lost GPU or one that needs the node rebooted or service is tainted NoExecute
	// (the governing policy's spec.dra.unhealthyEffect).
	Evict bool
}

// Entry is one published device as Prepare resolves it.
type Entry struct {
	// Name is the device's name in the slice: gpu-<index> or gpu-<index>-mig-<gi>-<ci>.
	Name string
	// UUID is the GPU's or MIG device's UUID (its name in the node's CDI spec).
	UUID string
	// Parent is a MIG device's GPU UUID, "" for a whole GPU.
	Parent string
	// Taint is the device's health taint, nil when in service.
	Taint *resourceapi.DeviceTaint
	// Message says why the device is tainted.
	Message string
}

// Inventory is the devices of one slice, with the table Prepare resolves names by.
type Inventory struct {
	Devices []resourceapi.Device
	Entries map[string]Entry
}

// Devices computes the node's devices: a whole GPU per GPU not in MIG mode, a MIG device
// per MIG device of a GPU in MIG mode (the GPU itself is then not published). A GPU whose
// UUID cannot be read is left out. Each device carries its parent GPU's health taint.
func Devices(f Facts) Inventory {
	inv := Inventory{Entries: map[string]Entry{}}
	if f.Snapshot == nil {
		return inv
	}
	for i := range f.Snapshot.Devices {
		d := &f.Snapshot.Devices[i]
		if d.UUID == "" || d.Err(gpu.FieldUUID) != nil {
			continue
		}
		st, ok := f.Health[d.UUID]
		if !ok {
			st = health.NewState(f.Snapshot.Time)
		}
		taint, msg := Taint(st, d.Unreachable() != nil, f.Evict)
		common := gpuAttributes(f, d)
		if d.MIG.Enabled && len(d.MIGDevices) > 0 {
			for _, m := range d.MIGDevices {
				name := fmt.Sprintf("gpu-%d-mig-%d-%d", d.Index, m.GPUInstance, m.ComputeInstance)
				attrs := clone(common)
				attrs["type"] = str(TypeMIG)
				attrs["uuid"] = str(m.UUID)
				attrs["profile"] = str(m.Profile)
				attrs["parentUUID"] = str(d.UUID)
				attrs["parentIndex"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(d.Index))}
				inv.add(device(name, attrs, m.MemoryMiB, taint), Entry{Name: name, UUID: m.UUID, Parent: d.UUID, Taint: taint, Message: msg})
			}
			continue
		}
		name := fmt.Sprintf("gpu-%d", d.Index)
		attrs := clone(common)
		attrs["type"] = str(TypeGPU)
		attrs["uuid"] = str(d.UUID)
		var mem uint64
		if d.Err(gpu.FieldMemory) == nil {
			mem = d.Memory.TotalMiB
		}
		inv.add(device(name, attrs, mem, taint), Entry{Name: name, UUID: d.UUID, Taint: taint, Message: msg})
	}
	return inv
}

func (inv *Inventory) add(d resourceapi.Device, e Entry) {
	inv.Devices = append(inv.Devices, d)
	inv.Entries[e.Name] = e
}

func device(name string, attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, memMiB uint64, taint *resourceapi.DeviceTaint) resourceapi.Device {
	d := resourceapi.Device{Name: name, Attributes: attrs}
	if memMiB > 0 {
		d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: *resource.NewQuantity(int64(memMiB)<<20, resource.BinarySI)}}
	}
	if taint != nil {
		d.Taints = []resourceapi.DeviceTaint{*taint}
	}
	return d
}

// gpuAttributes are the attributes a GPU and its MIG devices share.
func gpuAttributes(f Facts, d *gpu.Device) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	a := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"index": {IntValue: ptr.To(int64(d.Index))},
	}
	set := func(name resourceapi.QualifiedName, v string) {
		if v != "" {
			a[name] = str(v)
		}
	}
	setVersion := func(name resourceapi.QualifiedName, v string) {
		if sv, ok := semver(v); ok {
			a[name] = resourceapi.DeviceAttribute{VersionValue: &sv}
		}
	}
	if d.Err(gpu.FieldName) == nil {
		set("productName", d.Name)
	}
	set("brand", d.Brand)
	if d.Err(gpu.FieldArchitecture) == nil {
		set("architecture", d.Architecture)
	}
	if d.Err(gpu.FieldSerial) == nil {
		set("serial", d.Serial)
	}
	if cc := d.ComputeCapability; d.Err(gpu.FieldComputeCap) == nil && (cc.Major > 0 || cc.Minor > 0) {
		setVersion("cudaComputeCapability", fmt.Sprintf("%d.%d", cc.Major, cc.Minor))
	}
	setVersion("driverVersion", f.Snapshot.Driver.Version)
	setVersion("cudaDriverVersion", f.Snapshot.Driver.CUDAVersion)
	if f.Class != nil {
		set("platformClass", f.Class(d))
	}
	if bdf, ok := busID(d.PCI.BusID); ok && d.Err(gpu.FieldPCI) == nil {
		if attr, err := deviceattribute.GetPCIBusIDAttribute(bdf); err == nil {
			a[attr.Name] = attr.Value
		}
		if f.PCIeRoot != nil {
			if root, ok := f.PCIeRoot(bdf); ok {
				a[deviceattribute.StandardDeviceAttributePCIeRoot] = str(root)
			}
		}
	}
	if d.NUMANode >= 0 && d.Err(gpu.FieldNUMA) == nil {
		a[deviceattribute.StandardDeviceAttributeNUMANode] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(d.NUMANode))}
	}
	return a
}

// busID converts NVML's bus ID ("00000000:18:00.0") to the standard attribute's form
// ("0000:18:00.0", lower case).
func busID(nvml string) (string, bool) {
	dom, rest, ok := strings.Cut(strings.ToLower(nvml), ":")
	if !ok || len(dom) < 4 || strings.Trim(dom[:len(dom)-4], "0") != "" {
		return "", false
	}
	return dom[len(dom)-4:] + ":" + rest, true
}

// semver turns a dotted version ("580.159.04", "13.0", "9.0") into semantic-version form
// ("580.159.4", "13.0.0", "9.0.0"): leading zeros dropped, missing parts zero.
func semver(v string) (string, bool) {
	parts := strings.Split(v, ".")
	if v == "" || len(parts) > 3 {
		return "", false
	}
	out := make([]string, 3)
	for i := range out {
		out[i] = "0"
		if i < len(parts) {
			n, err := strconv.ParseUint(parts[i], 10, 32)
			if err != nil {
				return "", false
			}
			out[i] = strconv.FormatUint(n, 10)
		}
	}
	return strings.Join(out, "."), true
}

func str(v string) resourceapi.DeviceAttribute {
	if len(v) > maxString {
		v = v[:maxString]
	}
	return resourceapi.DeviceAttribute{StringValue: &v}
}

func clone(m map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	out := make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(m)+5)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// PCIeRootUnder finds a bus ID's PCIe root complex in the sysfs under the host root root.
func PCIeRootUnder(root string) func(busID string) (string, bool) {
	return func(busID string) (string, bool) {
		a, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(busID, deviceattribute.WithFSFromRoot(root))
		if err != nil || a.Value.StringValue == nil {
			return "", false
		}
		return *a.Value.StringValue, true
	}
}
