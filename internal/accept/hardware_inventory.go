package accept

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
)

// hardwareChecks is layer L1: GPUs and drivers.
func hardwareChecks() []Check {
	return append(hardwareInventoryChecks(), hardwareHealthChecks()...)
}

func hardwareInventoryChecks() []Check {
	return []Check{
		{ID: "hardware.driver", Layer: LayerHardware, Title: "GPU driver loaded and answering",
			Fix: "install or load the NVIDIA driver (nvidia.ko) and its management library (libnvidia-ml.so.1); check `dmesg | grep NVRM`",
			Run: checkDriver},
		{ID: "hardware.gpu-count", Layer: LayerHardware, Title: "GPU count as expected",
			Fix: "a missing GPU is a seating, power or PCIe fault: check `dmesg` for fallen-off-the-bus, reseat, or open a hardware ticket",
			Run: checkGPUCount},
		{ID: "hardware.gpu-model", Layer: LayerHardware, Title: "every GPU is the expected model",
			Fix: "the node's hardware SKU does not match its pool: move it to the right pool or fix the policy's expect.model",
			Run: checkGPUModel},
		{ID: "hardware.gpu-memory", Layer: LayerHardware, Title: "GPU memory size",
			Fix: "a GPU reporting less memory than its siblings has a memory fault or a wrong SKU: open a hardware ticket",
			Run: checkMemory},
		{ID: "hardware.persistence-mode", Layer: LayerHardware, Title: "persistence mode on",
			Fix: "enable persistence (nvidia-persistenced, or `nvidia-smi -pm 1`) in the node image",
			Run: checkPersistence},
		{ID: "hardware.mig-mode", Layer: LayerHardware, Title: "MIG mode as expected",
			Fix: "set MIG mode with `nvidia-smi -mig 0|1` and reset the GPU, or fix the policy's expect.mig",
			Run: checkMIG},
		{ID: "hardware.driver-version", Layer: LayerHardware, Title: "driver version in the version matrix",
			Fix: "install a driver version the policy's versions.driver allows",
			Run: checkDriverVersion},
		{ID: "hardware.cuda-version", Layer: LayerHardware, Title: "driver's CUDA version in the version matrix",
			Fix: "install a driver whose CUDA version the policy's versions.cuda allows",
			Run: checkCUDAVersion},
		{ID: "hardware.pcie-link", Layer: LayerHardware, Title: "PCIe link at full generation and width",
			Fix: "a degraded link is a riser, slot, cable or BIOS fault: reseat the GPU, check BIOS PCIe settings, or open a hardware ticket",
			Run: checkPCIeLink},
		{ID: "hardware.nvlink", Layer: LayerHardware, Title: "NVLink links up",
			Fix: "inactive NVLinks: check `nvidia-smi nvlink -s`, the fabric manager, and reseat the GPU baseboard",
			Run: checkNVLink},
		{ID: "hardware.fabric", Layer: LayerHardware, Title: "NVSwitch fabric registration complete",
			Fix: "start or restart nvidia-fabricmanager and check its log; the GPU cannot use NVLink until registration completes",
			Run: checkFabric},
	}
}

func checkDriver(f *Facts, _ *Policy) Verdict {
	if f.GPUErr != nil {
		return fail("%v", f.GPUErr)
	}
	if f.GPU == nil {
		return fail("no GPU backend")
	}
	d := f.GPU.Driver
	msg := fmt.Sprintf("driver %s, CUDA %s", orUnknown(d.Version), orUnknown(d.CUDAVersion))
	if d.LibraryVersion != "" {
		msg += ", NVML " + d.LibraryVersion
	}
	if e, ok := f.GPU.Errors[gpu.FieldDriverVersion]; ok {
		return fail("driver version not readable: %s", e.Message)
	}
	return pass("%s", msg)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func checkGPUCount(f *Facts, p *Policy) Verdict {
	if f.GPUErr != nil {
		return fail("cannot count GPUs: %v", f.GPUErr)
	}
	n := 0
	if f.GPU != nil {
		n = len(f.GPU.Devices)
	}
	v := Verdict{}
	if f.GPU != nil {
		for _, d := range f.GPU.Devices {
			v.Evidence = append(v.Evidence, fmt.Sprintf("GPU %d: %s %s at %s", d.Index, d.Name, d.UUID, d.PCI.BusID))
		}
	}
	switch {
	case n == 0:
		v.Status, v.Message = StatusFail, "no GPUs found"
	case p.Expect.GPUs > 0 && n > p.Expect.GPUs:
		v.Status, v.Message = StatusFail, fmt.Sprintf("%s found, %d expected", plural(n, "GPU"), p.Expect.GPUs)
		v.Fix = "more GPUs than the policy expects: the node is in the wrong pool, or the policy's expect.gpus (or --expect-gpus) is wrong; nothing is wrong with the GPUs"
	case p.Expect.GPUs > 0 && n != p.Expect.GPUs:
		v.Status, v.Message = StatusFail, fmt.Sprintf("%s found, %d expected", plural(n, "GPU"), p.Expect.GPUs)
	case p.Expect.GPUs > 0:
		v.Status, v.Message = StatusPass, fmt.Sprintf("%s, as expected", plural(n, "GPU"))
	default:
		v.Status, v.Message = StatusPass, fmt.Sprintf("%s (no count expected by the policy)", plural(n, "GPU"))
	}
	return v
}

func checkGPUModel(f *Facts, p *Policy) Verdict {
	if v, ok := needGPUs(f); !ok {
		return v
	}
	models := map[string][]int{}
	var order []string
	for _, d := range f.GPU.Devices {
		if _, seen := models[d.Name]; !seen {
			order = append(order, d.Name)
		}
		models[d.Name] = append(models[d.Name], d.Index)
	}
	v := Verdict{}
	for _, m := range order {
		v.Evidence = append(v.Evidence, fmt.Sprintf("%q: GPUs %v", m, models[m]))
	}
	// The GPUs that are not the model: the policy's, else the node's most common one.
	want := p.Expect.Model
	if want == "" {
		for _, m := range order {
			if len(models[m]) > len(models[want]) {
				want = m
			}
		}
	}
	for i := range f.GPU.Devices {
		d := &f.GPU.Devices[i]
		if d.Name == want {
			v.GPUs = append(v.GPUs, GPUResultOf(d, StatusPass, fmt.Sprintf("%q", d.Name)))
		} else {
			v.GPUs = append(v.GPUs, GPUResultOf(d, StatusFail, fmt.Sprintf("%q, not %q", d.Name, want)))
		}
	}
	switch {
	case p.Expect.Model != "" && (len(order) != 1 || order[0] != p.Expect.Model):
		v.Status, v.Message = StatusFail, fmt.Sprintf("found %s, expected %q: %s", quoteAll(order), p.Expect.Model, BadGPUs(v.GPUs))
	case len(order) > 1:
		v.Status, v.Message = StatusFail, fmt.Sprintf("mixed GPU models on one node: %s: %s", quoteAll(order), BadGPUs(v.GPUs))
	default:
		v.Status, v.Message = StatusPass, fmt.Sprintf("%s: %q", allOf(len(f.GPU.Devices), "GPU"), order[0])
	}
	return v
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func checkMemory(f *Facts, p *Policy) Verdict {
	var largest uint64
	if f.GPU != nil {
		for _, d := range f.GPU.Devices {
			if d.Err(gpu.FieldMemory) == nil && d.Memory.TotalMiB > largest {
				largest = d.Memory.TotalMiB
			}
		}
	}
	return perGPU(f, []gpu.Field{gpu.FieldMemory}, func(d *gpu.Device) gpuVerdict {
		got := d.Memory.TotalMiB
		switch {
		case p.Expect.MinMemoryMiB > 0 && got < p.Expect.MinMemoryMiB:
			return gpuVerdict{StatusFail, fmt.Sprintf("%d MiB, policy wants at least %d MiB", got, p.Expect.MinMemoryMiB), ""}
		case got < largest && d.Name == sameNameAsLargest(f, largest):
			return gpuVerdict{StatusFail, fmt.Sprintf("%d MiB, less than the %d MiB of the same model on this node", got, largest), ""}
		}
		return gpuVerdict{StatusPass, fmt.Sprintf("%d MiB", got), ""}
	})
}

func sameNameAsLargest(f *Facts, largest uint64) string {
	for _, d := range f.GPU.Devices {
		if d.Memory.TotalMiB == largest {
			return d.Name
		}
	}
	return ""
}

func checkPersistence(f *Facts, p *Policy) Verdict {
	want := p.Expect.PersistenceMode == nil || *p.Expect.PersistenceMode
	return perGPU(f, []gpu.Field{gpu.FieldPersistence}, func(d *gpu.Device) gpuVerdict {
		if !want {
			return gpuVerdict{StatusPass, fmt.Sprintf("persistence %s (not required)", onOff(d.PersistenceMode)), ""}
		}
		if !d.PersistenceMode {
			return gpuVerdict{StatusFail, "persistence mode off", ""}
		}
		return gpuVerdict{StatusPass, "persistence mode on", ""}
	})
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func checkMIG(f *Facts, p *Policy) Verdict {
	return perGPU(f, []gpu.Field{gpu.FieldMIG}, func(d *gpu.Device) gpuVerdict {
		if !d.MIG.Capable {
			if p.Expect.MIG == "enabled" {
				return gpuVerdict{StatusFail, "GPU is not MIG-capable, policy wants MIG enabled", ""}
			}
			return gpuVerdict{StatusPass, "not MIG-capable", ""}
		}
		cur := enabledWord(d.MIG.Enabled)
		if d.MIG.PendingEnabled != d.MIG.Enabled {
			return gpuVerdict{StatusWarn, fmt.Sprintf("MIG %s, %s after the next GPU reset", cur, enabledWord(d.MIG.PendingEnabled)), ""}
		}
		if p.Expect.MIG != "any" && p.Expect.MIG != cur {
			return gpuVerdict{StatusFail, fmt.Sprintf("MIG %s, policy wants %s", cur, p.Expect.MIG), ""}
		}
		return gpuVerdict{StatusPass, "MIG " + cur, ""}
	})
}

func enabledWord(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}
