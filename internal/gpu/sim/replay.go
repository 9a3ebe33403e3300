package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
)

// perf is a GPU's performance scaling, 1 when healthy.
type perf struct{ bandwidth, compute float64 }

// state is the simulated node after replaying faults: a pure function of the base devices,
// the faults and the time.
type state struct {
	devs   []gpu.Device
	lost   []bool
	headed []bool // the driver has printed the GPU's PCI→UUID header
	perf   []perf
	lines  []KernelLine
	base   []gpu.Device // what a reset or a reboot restores
	boots  int          // node reboots replayed
}

// replay applies, in order, every fault whose time has come (At <= elapsed) to a copy of
// base. faults must be sorted by At.
func replay(base []gpu.Device, faults []Fault, start time.Time, elapsed time.Duration) *state {
	st := &state{
		devs:   make([]gpu.Device, len(base)),
		lost:   make([]bool, len(base)),
		headed: make([]bool, len(base)),
		perf:   make([]perf, len(base)),
		base:   base,
	}
	for i, d := range base {
		st.devs[i] = cloneDevice(d)
		st.perf[i] = perf{1, 1}
	}
	for _, f := range faults {
		if f.At > elapsed {
			break
		}
		st.apply(f, start.Add(f.At))
	}
	for i, lost := range st.lost {
		if lost {
			markLost(&st.devs[i])
		}
	}
	return st
}

func (st *state) log(at time.Time, text string) {
	st.lines = append(st.lines, KernelLine{Time: at, Text: text})
}

func (st *state) apply(f Fault, at time.Time) {
	switch f.Type {
	case FaultKernelLog:
		st.log(at, f.Message)
		return
	case FaultXID:
		st.applyXID(f, at)
		return
	case FaultNodeReboot:
		st.reboot(at)
		return
	case FaultGPUReset:
		st.reset(f.GPU, at)
		return
	}
	if f.GPU < 0 || f.GPU >= len(st.devs) {
		return // validated before; never applied out of range
	}
	d := &st.devs[f.GPU]
	n := max(f.Count, 1)
	switch f.Type {
	case FaultECCCorrected:
		d.ECC.VolatileCorrected += n
		d.ECC.AggregateCorrected += n
	case FaultECCUncorrected:
		d.ECC.VolatileUncorrected += n
		d.ECC.AggregateUncorrected += n
	case FaultRowRemapPending:
		d.RowRemap.Pending = true
		d.RowRemap.Uncorrectable += int(min(n, 1<<20))
	case FaultRowRemapFailure:
		d.RowRemap.Failure = true
	case FaultPCIeDowngrade:
		if f.LinkGen > 0 {
			d.PCI.LinkGen = f.LinkGen
		}
		if f.LinkWidth > 0 {
			d.PCI.LinkWidth = f.LinkWidth
		}
	case FaultNVLinkDown:
		for i := range d.NVLinks {
			if len(f.Links) == 0 || slices.Contains(f.Links, d.NVLinks[i].Link) {
				d.NVLinks[i].Active = false
			}
		}
	case FaultThermalThrottle:
		d.Thermal.GPUC = f.TemperatureC
		if d.Thermal.GPUC == 0 {
			d.Thermal.GPUC = defaultThrottleTempC
			if d.Thermal.SlowdownC > 0 {
				d.Thermal.GPUC = d.Thermal.SlowdownC + 2
			}
		}
		setClockEvents(d, gpu.ClockEventHWSlowdown, gpu.ClockEventHWThermal)
	case FaultPowerThrottle:
		if f.PowerW > 0 {
			d.Power.DrawW = f.PowerW
		}
		setClockEvents(d, gpu.ClockEventHWSlowdown, gpu.ClockEventHWPowerBrake)
	case FaultGPULost:
		st.lost[f.GPU] = true
	case FaultRecoveryAction:
		d.RecoveryAction = f.Action
	case FaultSlowBandwidth:
		st.perf[f.GPU].bandwidth = f.Factor
	case FaultSlowCompute:
		st.perf[f.GPU].compute = f.Factor
	}
}

// applyXID writes the Xid line (after the GPU's header, the first time) and applies the
// state the code implies.
func (st *state) applyXID(f Fault, at time.Time) {
	if f.GPU < 0 || f.GPU >= len(st.devs) {
		return
	}
	d := st.devs[f.GPU]
	effect := xidTable[f.XID]
	msg := f.Message
	if f.XID == 154 {
		to := f.Action
		if to == "" {
			if a, ok := actionFromMessage(msg); ok {
				to = a
			} else {
				to = gpu.RecoveryGPUReset
			}
		}
		if msg == "" {
			msg = recoveryMessage(d.RecoveryAction, to)
		}
		f.Action = to
	}
	if msg == "" {
		msg = effect.message
	}
	if msg == "" {
		msg = fmt.Sprintf("Simulated Xid %d.", f.XID)
	}
	if !st.headed[f.GPU] {
		st.headed[f.GPU] = true
		for _, h := range xidHeader(d) {
			st.log(at, h)
		}
	}
	st.log(at, xidLine(d, f, msg))
	if f.XID == 79 {
		st.log(at, fmt.Sprintf("NVRM: GPU %s: GPU has fallen off the bus.", sysfsAddr(d.PCI.BusID)))
	}
	if effect.effect != "" {
		g := f
		g.Type, g.Count = effect.effect, 1
		st.apply(g, at)
	}
}

// clockEventOrder is the order clock events are listed in, as NVML's bit order.
var clockEventOrder = []gpu.ClockEvent{
	gpu.ClockEventIdle, gpu.ClockEventAppSetting, gpu.ClockEventSWPowerCap, gpu.ClockEventHWSlowdown,
	gpu.ClockEventSyncBoost, gpu.ClockEventSWThermal, gpu.ClockEventHWThermal,
	gpu.ClockEventHWPowerBrake, gpu.ClockEventDisplayClock,
}

// setClockEvents adds throttle reasons; a throttled GPU is busy, so it is no longer idle.
func setClockEvents(d *gpu.Device, add ...gpu.ClockEvent) {
	evs := slices.DeleteFunc(d.ClockEvents, func(c gpu.ClockEvent) bool { return c == gpu.ClockEventIdle })
	for _, a := range add {
		if !slices.Contains(evs, a) {
			evs = append(evs, a)
		}
	}
	slices.SortStableFunc(evs, func(a, b gpu.ClockEvent) int {
		return rank(a) - rank(b)
	})
	d.ClockEvents = evs
}

func rank(c gpu.ClockEvent) int {
	if i := slices.Index(clockEventOrder, c); i >= 0 {
		return i
	}
	return len(clockEventOrder)
}

// allFields are the device facts a lost GPU can no longer answer. The identity (UUID, name,
// serial, PCI bus id) stays readable: the driver knew it before it lost the device.
var allFields = []gpu.Field{
	gpu.FieldDevice, gpu.FieldArchitecture, gpu.FieldComputeCap, gpu.FieldMemory, gpu.FieldPCIeLink,
	gpu.FieldPCIeReplay, gpu.FieldVBIOS, gpu.FieldECCMode, gpu.FieldECCErrors, gpu.FieldRetiredPages,
	gpu.FieldRowRemap, gpu.FieldTemperature, gpu.FieldTempThresholds, gpu.FieldPower,
	gpu.FieldClockEvents, gpu.FieldPersistence, gpu.FieldMIG, gpu.FieldNVLink, gpu.FieldFabric,
	gpu.FieldRecoveryAction, gpu.FieldNUMA,
}

// markLost makes every fact but the identity fail with gpu.ErrGPULost.
func markLost(d *gpu.Device) {
	err := fmt.Errorf("GPU %d (%s): %w", d.Index, d.PCI.BusID, gpu.ErrGPULost)
	for _, f := range allFields {
		d.SetErr(f, err)
	}
}

// cloneDevice deep-copies a device.
func cloneDevice(d gpu.Device) gpu.Device {
	d.ClockEvents = slices.Clone(d.ClockEvents)
	d.NVLinks = slices.Clone(d.NVLinks)
	d.Peers = slices.Clone(d.Peers)
	d.MIGDevices = slices.Clone(d.MIGDevices)
	if d.Errors != nil {
		m := make(map[gpu.Field]gpu.FieldError, len(d.Errors))
		for k, v := range d.Errors {
			m[k] = v
		}
		d.Errors = m
	}
	return d
}
