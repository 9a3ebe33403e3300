package labels

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
)

// NodeInfo holds the host facts GFD labels that the GPU snapshot does not carry.
type NodeInfo struct {
	// Machine is the DMI product name (/sys/class/dmi/id/product_name), "" when unknown.
	// gpunode omits nvidia.com/gpu.machine then, where GFD would write "unknown".
	Machine string
	// GPUMode is "compute" (PCI class 3D controller) or "graphics" (VGA controller), or
	// "unknown" when the GPUs disagree; "" means compute, the data-centre case.
	GPUMode string
	// VGPUPresent is true when the GPUs are NVIDIA vGPUs (a guest of a vGPU host).
	VGPUPresent bool
}

// Config is the device-plugin configuration GFD's labels reflect.
type Config struct {
	// MIGStrategy is "none" (the default when empty), "single" or "mixed".
	MIGStrategy string
	// Sharing is the GPU sharing configuration.
	Sharing Sharing
}

// Sharing mirrors the device plugin's sharing configuration for the full-GPU resource.
type Sharing struct {
	// Strategy is "none" (the default when empty), "time-slicing" or "mps".
	Strategy string
	// Replicas is how many schedulable replicas each GPU is advertised as; 0 and 1 mean
	// the GPU is not shared.
	Replicas int
	// Renamed is true when the shared resource is advertised under another name; GFD then
	// leaves the "-SHARED" suffix off the product.
	Renamed bool
}

// Validate reports a configuration Discovery would have to ignore: an unknown MIG or
// sharing strategy, negative replicas, or replicas above 1 without a sharing strategy.
func (c Config) Validate() error {
	var errs []error
	switch c.MIGStrategy {
	case "", MIGStrategyNone, MIGStrategySingle, MIGStrategyMixed:
	default:
		errs = append(errs, fmt.Errorf("MIG strategy %q: want none, single or mixed", c.MIGStrategy))
	}
	switch c.Sharing.Strategy {
	case "", SharingNone, SharingTimeSlicing, SharingMPS:
	default:
		errs = append(errs, fmt.Errorf("sharing strategy %q: want none, time-slicing or mps", c.Sharing.Strategy))
	}
	if c.Sharing.Replicas < 0 {
		errs = append(errs, fmt.Errorf("sharing replicas %d: must not be negative", c.Sharing.Replicas))
	}
	if c.Sharing.Replicas > 1 && !sharingStrategy(c.Sharing.Strategy) {
		errs = append(errs, fmt.Errorf("sharing replicas %d need strategy time-slicing or mps, have %q",
			c.Sharing.Replicas, c.Sharing.Strategy))
	}
	return errors.Join(errs...)
}

func sharingStrategy(s string) bool { return s == SharingTimeSlicing || s == SharingMPS }

// Discovery returns GPU Feature Discovery's labels for the snapshot, with GFD's value
// formats, plus the GPU Operator's nvidia.com/gpu.present=true. It returns an empty map
// for a nil snapshot, a snapshot without devices, or a vendor other than NVIDIA.
//
// A fact that is missing or malformed costs its labels and nothing else: a driver version
// that is not "X.Y[.Z]" gives no driver labels, a device without a readable memory size
// gives no gpu.memory, and so on. The per-GPU labels describe the reference device (the
// lowest-index device whose name could be read; see the package comment for
// heterogeneous nodes). MIG strategies single and mixed are reported in mig.strategy, but
// the per-MIG-profile labels are not produced: the snapshot does not list MIG instances.
func Discovery(snap *gpu.Snapshot, node NodeInfo, cfg Config) map[string]string {
	out := map[string]string{}
	if snap == nil || len(snap.Devices) == 0 || !isNVIDIA(snap.Driver.Vendor) {
		return out
	}
	addVersionLabels(out, snap)
	if ref := referenceDevice(snap.Devices); ref != nil {
		addResourceLabels(out, snap.Devices, ref, cfg.Sharing)
	}
	addMIGLabels(out, snap.Devices, cfg)
	addNodeLabels(out, node)
	if clique, ok := fabricClique(snap.Devices); ok {
		out[KeyGPUClique] = clique
	}
	out[KeyGPUPresent] = "true"
	return keepValid(out)
}

// isNVIDIA treats an empty vendor as NVIDIA: both backends are NVIDIA's today.
func isNVIDIA(vendor string) bool {
	return vendor == "" || strings.EqualFold(vendor, "nvidia")
}

// deviceName returns the device's name when it could be read.
func deviceName(d *gpu.Device) (string, bool) {
	if d.Err(gpu.FieldDevice) != nil || d.Err(gpu.FieldName) != nil {
		return "", false
	}
	name := strings.TrimSpace(d.Name)
	return name, name != ""
}

// referenceDevice is the lowest-index device whose name could be read, or nil.
func referenceDevice(devices []gpu.Device) *gpu.Device {
	for i := range devices {
		if _, ok := deviceName(&devices[i]); ok {
			return &devices[i]
		}
	}
	return nil
}

// readable reports whether field f of d holds a valid value.
func readable(d *gpu.Device, f gpu.Field) bool {
	return d.Err(gpu.FieldDevice) == nil && d.Err(f) == nil
}

// addResourceLabels adds the nvidia.com/gpu.* labels of the reference device; the count
// is the number of devices that share its name.
func addResourceLabels(out map[string]string, devices []gpu.Device, ref *gpu.Device, sh Sharing) {
	refName, _ := deviceName(ref)
	count, allMIG := 0, true
	for i := range devices {
		if name, ok := deviceName(&devices[i]); ok && name == refName {
			count++
			allMIG = allMIG && readable(&devices[i], gpu.FieldMIG) && devices[i].MIG.Enabled
		}
	}
	// GFD labels a name whose every GPU has MIG enabled without sharing (replicas 0).
	replicas, strategy, shared := 0, SharingNone, false
	if !allMIG {
		replicas = max(sh.Replicas, 1)
		if replicas > 1 && sharingStrategy(sh.Strategy) {
			strategy, shared = sh.Strategy, true
		} else {
			replicas = 1
		}
	}
	out[KeyGPUProduct] = productValue(refName, shared && !sh.Renamed)
	out[KeyGPUCount] = strconv.Itoa(count)
	out[KeyGPUReplicas] = strconv.Itoa(replicas)
	out[KeyGPUSharingStrategy] = strategy
	if readable(ref, gpu.FieldMemory) && ref.Memory.TotalMiB > 0 {
		out[KeyGPUMemory] = strconv.FormatUint(ref.Memory.TotalMiB, 10)
	}
	if cc := ref.ComputeCapability; readable(ref, gpu.FieldComputeCap) && cc.Major > 0 {
		out[KeyGPUFamily] = gfdFamily(cc.Major, cc.Minor)
		out[KeyGPUComputeMajor] = strconv.Itoa(cc.Major)
		out[KeyGPUComputeMinor] = strconv.Itoa(cc.Minor)
	}
}

// sharedSuffix is what GFD appends to the product of a shared, not renamed resource.
const sharedSuffix = "-SHARED"

// productValue is GFD's product label: the sanitised name ("NVIDIA H100 80GB HBM3" ->
// "NVIDIA-H100-80GB-HBM3"), with "-SHARED" when shared. The name is cut so that the
// suffix still fits in 63 characters.
func productValue(name string, shared bool) string {
	v := SanitizeValue(name)
	if !shared || v == "" {
		return v
	}
	return trimValue(v, MaxValueLen-len(sharedSuffix)) + sharedSuffix
}

// gfdFamily is GFD's architecture family for a CUDA compute capability, "undefined" when
// GFD does not know it.
func gfdFamily(major, minor int) string {
	switch major {
	case 1:
		return "tesla"
	case 2:
		return "fermi"
	case 3:
		return "kepler"
	case 5:
		return "maxwell"
	case 6:
		return "pascal"
	case 7:
		if minor < 5 {
			return "volta"
		}
		return "turing"
	case 8:
		if minor < 9 {
			return "ampere"
		}
		return "ada-lovelace"
	case 9:
		return "hopper"
	case 10, 12:
		return "blackwell"
	}
	return "undefined"
}

// addMIGLabels adds mig.capable (true when any readable GPU is MIG-capable), mig.strategy
// and mps.capable (true when MPS sharing is configured and no GPU has MIG enabled).
func addMIGLabels(out map[string]string, devices []gpu.Device, cfg Config) {
	anyReadable, capable, migEnabled := false, false, false
	for i := range devices {
		if d := &devices[i]; readable(d, gpu.FieldMIG) {
			anyReadable = true
			capable = capable || d.MIG.Capable
			migEnabled = migEnabled || d.MIG.Enabled
		}
	}
	if anyReadable {
		out[KeyMIGCapable] = strconv.FormatBool(capable)
	}
	switch cfg.MIGStrategy {
	case "":
		out[KeyMIGStrategy] = MIGStrategyNone
	case MIGStrategyNone, MIGStrategySingle, MIGStrategyMixed:
		out[KeyMIGStrategy] = cfg.MIGStrategy
	}
	mps := cfg.Sharing.Strategy == SharingMPS && cfg.Sharing.Replicas > 1 && !migEnabled
	out[KeyMPSCapable] = strconv.FormatBool(mps)
}

// addNodeLabels adds gpu.machine (when known), gpu.mode and vgpu.present.
func addNodeLabels(out map[string]string, node NodeInfo) {
	if m := SanitizeValue(node.Machine); m != "" {
		out[KeyGPUMachine] = m
	}
	switch node.GPUMode {
	case "":
		out[KeyGPUMode] = GPUModeCompute
	case GPUModeCompute, GPUModeGraphics:
		out[KeyGPUMode] = node.GPUMode
	default:
		out[KeyGPUMode] = GPUModeUnknown
	}
	out[KeyVGPUPresent] = strconv.FormatBool(node.VGPUPresent)
}

// fabricClique returns "<cluster UUID>.<clique id>" when every GPU reports a completed,
// successful fabric registration with the same cluster UUID and clique id.
func fabricClique(devices []gpu.Device) (string, bool) {
	if len(devices) == 0 {
		return "", false
	}
	var uuid string
	var clique uint32
	for i := range devices {
		d := &devices[i]
		f := d.Fabric
		if !readable(d, gpu.FieldFabric) || f.State != "completed" ||
			(f.Status != "" && f.Status != "success") || f.ClusterUUID == "" {
			return "", false
		}
		if i == 0 {
			uuid, clique = f.ClusterUUID, f.CliqueID
		} else if f.ClusterUUID != uuid || f.CliqueID != clique {
			return "", false
		}
	}
	return uuid + "." + strconv.FormatUint(uint64(clique), 10), true
}
