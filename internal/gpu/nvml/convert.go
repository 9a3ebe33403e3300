package nvml

import (
	"errors"
	"fmt"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

// returnError is a failing nvml.Return. Its text is NVML's own (nvmlErrorString); errors.Is
// matches gpu.ErrNotSupported and gpu.ErrGPULost for the returns that mean those.
type returnError struct {
	ret  gonvml.Return
	text string
}

func (e *returnError) Error() string { return e.text }

// Is reports whether the NVML return means target.
func (e *returnError) Is(target error) bool {
	switch target {
	case gpu.ErrNotSupported:
		// FUNCTION_NOT_FOUND: the loaded library lacks the entry point (an older driver).
		return e.ret == gonvml.ERROR_NOT_SUPPORTED || e.ret == gonvml.ERROR_FUNCTION_NOT_FOUND
	case gpu.ErrGPULost:
		return e.ret == gonvml.ERROR_GPU_IS_LOST
	}
	return false
}

// toErr converts an nvml.Return into an error: nil for SUCCESS. nvml.Return implements
// error even for SUCCESS, so it must never be returned as an error itself.
func toErr(ret gonvml.Return) error {
	if ret == gonvml.SUCCESS {
		return nil
	}
	return &returnError{ret: ret, text: ret.Error()}
}

// returnIs reports whether err came from the NVML return ret.
func returnIs(err error, ret gonvml.Return) bool {
	var re *returnError
	return errors.As(err, &re) && re.ret == ret
}

// cudaVersion turns NVML's CUDA driver version (1000*major + 10*minor) into "major.minor".
func cudaVersion(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

var architectures = map[gonvml.DeviceArchitecture]string{
	gonvml.DEVICE_ARCH_KEPLER:    "kepler",
	gonvml.DEVICE_ARCH_MAXWELL:   "maxwell",
	gonvml.DEVICE_ARCH_PASCAL:    "pascal",
	gonvml.DEVICE_ARCH_VOLTA:     "volta",
	gonvml.DEVICE_ARCH_TURING:    "turing",
	gonvml.DEVICE_ARCH_AMPERE:    "ampere",
	gonvml.DEVICE_ARCH_ADA:       "ada",
	gonvml.DEVICE_ARCH_HOPPER:    "hopper",
	gonvml.DEVICE_ARCH_BLACKWELL: "blackwell",
	gonvml.DEVICE_ARCH_RUBIN:     "rubin",
	gonvml.DEVICE_ARCH_UNKNOWN:   "unknown",
}

// architectureName is the lower-case architecture name, "arch-N" for a number not known here.
func architectureName(a gonvml.DeviceArchitecture) string {
	if s, ok := architectures[a]; ok {
		return s
	}
	return fmt.Sprintf("arch-%d", a)
}

var brands = map[gonvml.BrandType]string{
	gonvml.BRAND_UNKNOWN:             "Unknown",
	gonvml.BRAND_QUADRO:              "Quadro",
	gonvml.BRAND_TESLA:               "Tesla",
	gonvml.BRAND_NVS:                 "NVS",
	gonvml.BRAND_GRID:                "GRID",
	gonvml.BRAND_GEFORCE:             "GeForce",
	gonvml.BRAND_TITAN:               "Titan",
	gonvml.BRAND_NVIDIA_VAPPS:        "NVIDIA Virtual Applications",
	gonvml.BRAND_NVIDIA_VPC:          "NVIDIA Virtual PC",
	gonvml.BRAND_NVIDIA_VCS:          "NVIDIA Virtual Compute Server",
	gonvml.BRAND_NVIDIA_VWS:          "NVIDIA RTX Virtual Workstation",
	gonvml.BRAND_NVIDIA_CLOUD_GAMING: "NVIDIA Cloud Gaming",
	gonvml.BRAND_QUADRO_RTX:          "Quadro RTX",
	gonvml.BRAND_NVIDIA_RTX:          "NVIDIA RTX",
	gonvml.BRAND_NVIDIA:              "NVIDIA",
	gonvml.BRAND_GEFORCE_RTX:         "GeForce RTX",
	gonvml.BRAND_TITAN_RTX:           "Titan RTX",
}

// brandName is the product brand as nvidia-smi prints it, "brand-N" for an unknown number.
func brandName(b gonvml.BrandType) string {
	if s, ok := brands[b]; ok {
		return s
	}
	return fmt.Sprintf("brand-%d", b)
}

// Clock-event reasons that gpu has no constant for.
const (
	clockEventBoardLimit  gpu.ClockEvent = "board-limit"
	clockEventReliability gpu.ClockEvent = "reliability"
)

var clockEventBits = []struct {
	bit   uint64
	event gpu.ClockEvent
}{
	{gonvml.ClocksEventReasonGpuIdle, gpu.ClockEventIdle},
	{gonvml.ClocksEventReasonApplicationsClocksSetting, gpu.ClockEventAppSetting},
	{gonvml.ClocksEventReasonSwPowerCap, gpu.ClockEventSWPowerCap},
	{gonvml.ClocksThrottleReasonHwSlowdown, gpu.ClockEventHWSlowdown},
	{gonvml.ClocksEventReasonSyncBoost, gpu.ClockEventSyncBoost},
	{gonvml.ClocksEventReasonSwThermalSlowdown, gpu.ClockEventSWThermal},
	{gonvml.ClocksThrottleReasonHwThermalSlowdown, gpu.ClockEventHWThermal},
	{gonvml.ClocksThrottleReasonHwPowerBrakeSlowdown, gpu.ClockEventHWPowerBrake},
	{gonvml.ClocksEventReasonDisplayClockSetting, gpu.ClockEventDisplayClock},
	{gonvml.ClocksEventReasonBoardLimit, clockEventBoardLimit},
	{gonvml.ClocksEventReasonReliability, clockEventReliability},
}

// clockEvents decodes a clock-event reason mask, lowest bit first; bits not known here come
// out as one "unknown-0x..." event so that they are never dropped.
func clockEvents(mask uint64) []gpu.ClockEvent {
	var out []gpu.ClockEvent
	for _, b := range clockEventBits {
		if mask&b.bit != 0 {
			out = append(out, b.event)
			mask &^= b.bit
		}
	}
	if mask != 0 {
		out = append(out, gpu.ClockEvent(fmt.Sprintf("unknown-%#x", mask)))
	}
	return out
}

var recoveryActions = map[uint64]gpu.RecoveryAction{
	0: gpu.RecoveryNone,
	1: gpu.RecoveryGPUReset,
	2: gpu.RecoveryNodeReboot,
	3: gpu.RecoveryDrainP2P,
	4: gpu.RecoveryDrainAndReset,
	// Newer than the constants of package gpu (nvml.h of go-nvml v0.13.4-1).
	5: "recover-imex-domain",
	6: "bus-reset",
	7: "system-reboot",
}

// recoveryAction names a value of NVML_FI_DEV_GET_GPU_RECOVERY_ACTION ("unknown-N" if new).
func recoveryAction(v uint64) gpu.RecoveryAction {
	if a, ok := recoveryActions[v]; ok {
		return a
	}
	return gpu.RecoveryAction(fmt.Sprintf("unknown-%d", v))
}

// fabricState names an nvmlGpuFabricState_t.
func fabricState(s uint8) string {
	switch s {
	case gonvml.GPU_FABRIC_STATE_NOT_SUPPORTED:
		return "not-supported"
	case gonvml.GPU_FABRIC_STATE_NOT_STARTED:
		return "not-started"
	case gonvml.GPU_FABRIC_STATE_IN_PROGRESS:
		return "in-progress"
	case gonvml.GPU_FABRIC_STATE_COMPLETED:
		return "completed"
	}
	return fmt.Sprintf("unknown-%d", s)
}

// cString converts a NUL-terminated C char array.
func cString[T int8 | uint8](b []T) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

// uuidString formats 16 bytes as a UUID, "" when all are zero (no cluster).
func uuidString(u [16]uint8) string {
	if u == ([16]uint8{}) {
		return ""
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
