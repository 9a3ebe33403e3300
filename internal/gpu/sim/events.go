package sim

import (
	"fmt"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// faultEvents are the events a fault raises when its time comes, as NVML would report them:
//
//   - xid: an EventXID (XID and Data the code, the MIG instances, Message the Xid text), then
//     the event of the state the code implies (79: EventGPULost; 48, 94, 95:
//     EventECCDoubleBit; 154: EventRecoveryAction);
//   - ecc-corrected: EventECCSingleBit, ecc-uncorrected: EventECCDoubleBit (Data the count);
//   - recovery-action: EventRecoveryAction (Data the driver's action code);
//   - gpu-lost: EventGPULost.
//
// Other faults change state only and raise none, like kernel-log lines.
func faultEvents(f Fault, devs []gpu.Device, at time.Time) []gpu.Event {
	if f.GPU < 0 || f.GPU >= len(devs) {
		return nil
	}
	e := gpu.Event{Time: at, Index: f.GPU, UUID: devs[f.GPU].UUID, GPUInstance: -1, ComputeInstance: -1}
	switch f.Type {
	case FaultXID:
		e.Kind, e.XID, e.Data = gpu.EventXID, f.XID, uint64(f.XID)
		if f.GPUInstance != nil {
			e.GPUInstance = *f.GPUInstance
		}
		if f.ComputeInstance != nil {
			e.ComputeInstance = *f.ComputeInstance
		}
		implied := xidTable[f.XID].effect
		if f.XID == 154 {
			f.Action = xid154Action(f)
		}
		e.Message = xidMessage(f)
		evs := []gpu.Event{e}
		if implied != "" {
			g := f
			g.Type, g.Count = implied, 1
			for _, ie := range faultEvents(g, devs, at) {
				ie.Message = fmt.Sprintf("implied by Xid %d", f.XID)
				evs = append(evs, ie)
			}
		}
		return evs
	case FaultECCCorrected:
		e.Kind, e.Data = gpu.EventECCSingleBit, max(f.Count, 1)
	case FaultECCUncorrected:
		e.Kind, e.Data = gpu.EventECCDoubleBit, max(f.Count, 1)
	case FaultRecoveryAction:
		code, _ := recoveryCode(f.Action)
		e.Kind, e.RecoveryAction, e.Data = gpu.EventRecoveryAction, f.Action, uint64(code)
	case FaultGPULost:
		e.Kind, e.Message = gpu.EventGPULost, "simulated: GPU is lost"
	default:
		return nil
	}
	return []gpu.Event{e}
}

// xid154Action is the new recovery action of an Xid 154 fault, as replay applies it.
func xid154Action(f Fault) gpu.RecoveryAction {
	if f.Action != "" {
		return f.Action
	}
	if a, ok := actionFromMessage(f.Message); ok {
		return a
	}
	return gpu.RecoveryGPUReset
}

// xidMessage is the text of an Xid fault: its own, else the driver's usual one for its code.
// For 154 without a message it names the new action only (the kernel line also names the
// old one, which depends on the faults before).
func xidMessage(f Fault) string {
	switch {
	case f.Message != "":
		return f.Message
	case xidTable[f.XID].message != "":
		return xidTable[f.XID].message
	case f.XID == 154:
		code, _ := recoveryCode(f.Action)
		return fmt.Sprintf("GPU recovery action changed to 0x%x (%s)", code, recoveryCodes[code].text)
	}
	return fmt.Sprintf("Simulated Xid %d.", f.XID)
}
