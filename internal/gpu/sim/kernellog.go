package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// KernelLine is one kernel-log line the simulated driver wrote.
type KernelLine struct {
	Time time.Time
	// Text is the line without a dmesg or syslog prefix, e.g.
	// "NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
	Text string
}

// xidTable is what an Xid code implies beyond its log line, and the text the driver prints
// when the scenario gives none. Codes not listed change no state.
var xidTable = map[int]struct {
	effect  FaultType
	message string
}{
	13:  {"", "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address"},
	31:  {"", "Ch 00000010, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f92_9a53d000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"},
	45:  {"", "Ch 00000010"},
	48:  {FaultECCUncorrected, "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 1, subpartition 0."},
	63:  {FaultRowRemapPending, "Row Remapper: New row marked for remapping, reset gpu to activate."},
	64:  {FaultRowRemapFailure, "Row Remapper: Failed to remap a row, GPU memory may be unreliable."},
	74:  {"", "NVLink: fatal error detected on link 0(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"},
	79:  {FaultGPULost, "GPU has fallen off the bus."},
	94:  {FaultECCUncorrected, "Contained: SM (0x1). RST: No, D-RST: No"},
	95:  {FaultECCUncorrected, "Uncontained: FBHUB. RST: Yes, D-RST: No"},
	119: {"", "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4)."},
	154: {FaultRecoveryAction, ""}, // the text names the old and the new action
}

// pciTag is the driver's "%04x:%02x:%02x" form of an NVML bus id ("00000000:18:00.0").
func pciTag(busID string) string {
	dom, bus, dev, _, ok := splitBusID(busID)
	if !ok {
		return strings.ToLower(busID)
	}
	return fmt.Sprintf("%04x:%02x:%02x", dom, bus, dev)
}

// sysfsAddr is the kernel's "0000:18:00.0" form of an NVML bus id.
func sysfsAddr(busID string) string {
	dom, bus, dev, fn, ok := splitBusID(busID)
	if !ok {
		return strings.ToLower(busID)
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", dom, bus, dev, fn)
}

// splitBusID parses "DDDDDDDD:BB:DD.F" (domain of 4 or 8 hex digits).
func splitBusID(id string) (dom, bus, dev, fn uint64, ok bool) {
	parts := strings.Split(id, ":")
	if len(parts) != 3 || (len(parts[0]) != 4 && len(parts[0]) != 8) || len(parts[1]) != 2 {
		return 0, 0, 0, 0, false
	}
	devFn := strings.Split(parts[2], ".")
	if len(devFn) != 2 || len(devFn[0]) != 2 || len(devFn[1]) != 1 {
		return 0, 0, 0, 0, false
	}
	var err [4]error
	dom, err[0] = strconv.ParseUint(parts[0], 16, 32)
	bus, err[1] = strconv.ParseUint(parts[1], 16, 8)
	dev, err[2] = strconv.ParseUint(devFn[0], 16, 8)
	fn, err[3] = strconv.ParseUint(devFn[1], 8, 8)
	for _, e := range err {
		if e != nil {
			return 0, 0, 0, 0, false
		}
	}
	return dom, bus, dev, fn, dev < 32
}

// xidLine formats an Xid line exactly as the driver does.
func xidLine(d gpu.Device, f Fault, msg string) string {
	addr := "PCI:" + pciTag(d.PCI.BusID)
	if f.GPUInstance != nil {
		addr += fmt.Sprintf(" GPU-I:%02d", *f.GPUInstance)
		if f.ComputeInstance != nil {
			addr += fmt.Sprintf(" GPU-CI:%02d", *f.ComputeInstance)
		}
	}
	if f.NoProcess {
		return fmt.Sprintf("NVRM: Xid (%s): %d, %s", addr, f.XID, msg)
	}
	pid, name := "'<unknown>'", "<unknown>"
	if f.PID > 0 {
		pid = strconv.Itoa(f.PID)
	}
	if f.Process != "" {
		name = f.Process
	}
	return fmt.Sprintf("NVRM: Xid (%s): %d, pid=%s, name=%s, %s", addr, f.XID, pid, name, msg)
}

// xidHeader is what the driver prints once per GPU before its first Xid: the PCI→UUID map.
func xidHeader(d gpu.Device) []string {
	return []string{
		fmt.Sprintf("NVRM: GPU at PCI:%s: %s", pciTag(d.PCI.BusID), d.UUID),
		"NVRM: GPU Board Serial Number: " + d.Serial,
	}
}

// recoveryMessage is XID 154's text for a change from one action to another.
func recoveryMessage(from, to gpu.RecoveryAction) string {
	fc, _ := recoveryCode(from)
	tc, _ := recoveryCode(to)
	return fmt.Sprintf("GPU recovery action changed from 0x%x (%s) to 0x%x (%s)",
		fc, recoveryCodes[fc].text, tc, recoveryCodes[tc].text)
}
