package sim

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// FaultType names what a fault does.
type FaultType string

// Fault types. An xid fault writes a driver Xid line and applies the state its code implies
// (see xidTable); kernel-log writes a line only; every other type changes state only.
const (
	FaultXID             FaultType = "xid"
	FaultECCCorrected    FaultType = "ecc-corrected"
	FaultECCUncorrected  FaultType = "ecc-uncorrected"
	FaultRowRemapPending FaultType = "row-remap-pending"
	FaultRowRemapFailure FaultType = "row-remap-failure"
	FaultPCIeDowngrade   FaultType = "pcie-downgrade"
	FaultNVLinkDown      FaultType = "nvlink-down"
	FaultThermalThrottle FaultType = "thermal-throttle"
	FaultPowerThrottle   FaultType = "power-throttle"
	FaultGPULost         FaultType = "gpu-lost"
	FaultRecoveryAction  FaultType = "recovery-action"
	FaultSlowBandwidth   FaultType = "slow-bandwidth"
	FaultSlowCompute     FaultType = "slow-compute"
	FaultKernelLog       FaultType = "kernel-log"
	// FaultGPUReset and FaultNodeReboot are recoveries, not faults: what a remediation
	// step did (see recover.go). They are scenario entries so that a replay shows them.
	FaultGPUReset   FaultType = "gpu-reset"
	FaultNodeReboot FaultType = "node-reboot"
)

// defaultThrottleTempC is the temperature of a thermal-throttle fault that names none.
const defaultThrottleTempC = 90

// faultFields lists, per fault type, the fields that apply to it besides at, gpu and type.
// Its keys are the known fault types, in the order error messages list them.
var faultFields = []struct {
	t      FaultType
	fields []string
}{
	{FaultXID, []string{"xid", "message", "pid", "process", "noProcess", "gpuInstance", "computeInstance", "action"}},
	{FaultECCCorrected, []string{"count"}},
	{FaultECCUncorrected, []string{"count"}},
	{FaultRowRemapPending, []string{"count"}},
	{FaultRowRemapFailure, nil},
	{FaultPCIeDowngrade, []string{"linkGen", "linkWidth"}},
	{FaultNVLinkDown, []string{"links"}},
	{FaultThermalThrottle, []string{"temperatureC"}},
	{FaultPowerThrottle, []string{"powerW"}},
	{FaultGPULost, nil},
	{FaultRecoveryAction, []string{"action"}},
	{FaultSlowBandwidth, []string{"factor"}},
	{FaultSlowCompute, []string{"factor"}},
	{FaultKernelLog, []string{"message"}},
	{FaultGPUReset, nil},
	{FaultNodeReboot, nil},
}

// FaultTypes lists every fault type.
func FaultTypes() []FaultType {
	out := make([]FaultType, len(faultFields))
	for i, f := range faultFields {
		out[i] = f.t
	}
	return out
}

func fieldsOf(t FaultType) ([]string, bool) {
	for _, f := range faultFields {
		if f.t == t {
			return f.fields, true
		}
	}
	return nil, false
}

// Fault is one simulated fault. Fields that do not apply to its Type are ignored.
type Fault struct {
	// At is the time from the backend's start at which the fault happens. Inject ignores it.
	At time.Duration
	// GPU is the index of the device (unused by kernel-log).
	GPU  int
	Type FaultType
	// XID is the Xid code (xid).
	XID int
	// Message is the Xid line's text (xid; a default per code when empty) or the whole
	// kernel-log line (kernel-log).
	Message string
	// PID and Process name the process in an Xid line; unknown when 0 and "".
	PID     int
	Process string
	// NoProcess writes the Xid line without pid and name, as the driver does when it has no
	// process context.
	NoProcess bool
	// GPUInstance and ComputeInstance attribute an Xid line to a MIG instance.
	GPUInstance     *int
	ComputeInstance *int
	// Count is the number of errors or remapped rows (ecc-*, row-remap-pending); 0 means 1.
	Count uint64
	// LinkGen and LinkWidth are the downgraded PCIe link (pcie-downgrade); 0 keeps the value.
	LinkGen   int
	LinkWidth int
	// Links are the NVLinks that go down (nvlink-down); empty means all of the GPU's links.
	Links []int
	// TemperatureC is the GPU temperature while throttled (thermal-throttle); 0 means 2 °C
	// above the GPU's slowdown threshold (90 °C when it has none).
	TemperatureC int
	// PowerW is the power draw while throttled (power-throttle); 0 keeps the draw.
	PowerW float64
	// Action is the recovery action (recovery-action; xid 154 instead of parsing Message).
	Action gpu.RecoveryAction
	// Factor scales bandwidth or compute (slow-bandwidth, slow-compute): 0 < Factor <= 1.
	Factor float64
}

// recoveryCodes are the driver's recovery action values, in code order (0x0, 0x1, ...), with
// the names its XID 154 line prints.
var recoveryCodes = []struct {
	action gpu.RecoveryAction
	text   string
}{
	{gpu.RecoveryNone, "None"},
	{gpu.RecoveryGPUReset, "GPU Reset Required"},
	{gpu.RecoveryNodeReboot, "Node Reboot Required"},
	{gpu.RecoveryDrainP2P, "Drain P2P"},
	{gpu.RecoveryDrainAndReset, "Drain and Reset"},
}

func recoveryCode(a gpu.RecoveryAction) (int, bool) {
	for i, r := range recoveryCodes {
		if r.action == a {
			return i, true
		}
	}
	return 0, false
}

func recoveryActions() string {
	var names []string
	for _, r := range recoveryCodes {
		names = append(names, string(r.action))
	}
	return strings.Join(names, ", ")
}

var recoveryToRE = regexp.MustCompile(`to 0x([0-9a-fA-F]+)`)

// actionFromMessage reads the new action from an XID 154 text such as
// "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)".
func actionFromMessage(msg string) (gpu.RecoveryAction, bool) {
	m := recoveryToRE.FindStringSubmatch(msg)
	if m == nil {
		return "", false
	}
	v, err := strconv.ParseUint(m[1], 16, 8)
	if err != nil || int(v) >= len(recoveryCodes) {
		return "", false
	}
	return recoveryCodes[v].action, true
}

// problem is a fault that cannot be applied: the field at fault (a YAML key) and why.
type problem struct {
	field string
	msg   string
}

// checkFault validates f against the devices it will apply to.
func checkFault(f Fault, devs []gpu.Device) *problem {
	if _, ok := fieldsOf(f.Type); !ok {
		var names []string
		for _, t := range FaultTypes() {
			names = append(names, string(t))
		}
		return &problem{"type", fmt.Sprintf("unknown fault type %q (want one of: %s)", f.Type, strings.Join(names, ", "))}
	}
	if strings.ContainsAny(f.Message, "\r\n") {
		return &problem{"message", "message must be a single line"}
	}
	if f.Type == FaultNodeReboot {
		return nil // the whole node: no GPU
	}
	if f.Type == FaultKernelLog {
		if strings.TrimSpace(f.Message) == "" {
			return &problem{"message", "kernel-log fault needs a message (the whole line)"}
		}
		return nil
	}
	if f.GPU < 0 || f.GPU >= len(devs) {
		return &problem{"gpu", fmt.Sprintf("gpu index %d out of range (scenario has %d GPUs)", f.GPU, len(devs))}
	}
	return checkTyped(f, devs[f.GPU])
}

func checkTyped(f Fault, d gpu.Device) *problem {
	switch f.Type {
	case FaultXID:
		return checkXID(f)
	case FaultPCIeDowngrade:
		if f.LinkGen == 0 && f.LinkWidth == 0 {
			return &problem{"type", "pcie-downgrade fault needs linkGen or linkWidth"}
		}
		if f.LinkGen < 0 || f.LinkGen > 6 {
			return &problem{"linkGen", fmt.Sprintf("linkGen %d out of range (1-6)", f.LinkGen)}
		}
		if f.LinkWidth != 0 && !slices.Contains([]int{1, 2, 4, 8, 16, 32}, f.LinkWidth) {
			return &problem{"linkWidth", fmt.Sprintf("linkWidth %d is not a PCIe width (1, 2, 4, 8, 16, 32)", f.LinkWidth)}
		}
	case FaultNVLinkDown:
		if len(d.NVLinks) == 0 {
			return &problem{"gpu", fmt.Sprintf("gpu %d has no NVLinks", f.GPU)}
		}
		for _, l := range f.Links {
			if !slices.ContainsFunc(d.NVLinks, func(n gpu.NVLink) bool { return n.Link == l }) {
				return &problem{"links", fmt.Sprintf("gpu %d has no NVLink %d (it has %d links)", f.GPU, l, len(d.NVLinks))}
			}
		}
	case FaultThermalThrottle:
		if f.TemperatureC < 0 || f.TemperatureC > 150 {
			return &problem{"temperatureC", fmt.Sprintf("temperatureC %d out of range (0-150)", f.TemperatureC)}
		}
	case FaultPowerThrottle:
		if f.PowerW < 0 {
			return &problem{"powerW", fmt.Sprintf("powerW %g is negative", f.PowerW)}
		}
	case FaultRecoveryAction:
		if _, ok := recoveryCode(f.Action); !ok {
			return &problem{"action", fmt.Sprintf("unknown recovery action %q (want one of: %s)", f.Action, recoveryActions())}
		}
	case FaultSlowBandwidth, FaultSlowCompute:
		if !(f.Factor > 0 && f.Factor <= 1) {
			return &problem{"factor", fmt.Sprintf("%s fault needs a factor in (0, 1], got %g", f.Type, f.Factor)}
		}
	}
	return nil
}

func checkXID(f Fault) *problem {
	if f.XID <= 0 || f.XID > 65535 {
		return &problem{"xid", fmt.Sprintf("xid fault needs an xid code from 1 to 65535, got %d", f.XID)}
	}
	if f.PID < 0 {
		return &problem{"pid", fmt.Sprintf("pid %d is negative", f.PID)}
	}
	if f.GPUInstance != nil && (*f.GPUInstance < 0 || *f.GPUInstance > 99) {
		return &problem{"gpuInstance", fmt.Sprintf("gpuInstance %d out of range (0-99)", *f.GPUInstance)}
	}
	if f.ComputeInstance != nil {
		if f.GPUInstance == nil {
			return &problem{"computeInstance", "computeInstance needs gpuInstance"}
		}
		if *f.ComputeInstance < 0 || *f.ComputeInstance > 99 {
			return &problem{"computeInstance", fmt.Sprintf("computeInstance %d out of range (0-99)", *f.ComputeInstance)}
		}
	}
	if f.XID != 154 {
		if f.Action != "" {
			return &problem{"action", "action applies to xid 154 only"}
		}
		return nil
	}
	if f.Action != "" {
		if _, ok := recoveryCode(f.Action); !ok {
			return &problem{"action", fmt.Sprintf("unknown recovery action %q (want one of: %s)", f.Action, recoveryActions())}
		}
		return nil
	}
	if f.Message != "" {
		if _, ok := actionFromMessage(f.Message); !ok {
			return &problem{"message", `xid 154 message must name the new action ("... to 0x1 (GPU Reset Required)"), or set action`}
		}
	}
	return nil
}
