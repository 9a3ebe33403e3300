package nvml

import (
	"errors"
	"fmt"
	"reflect"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

// thermal reads the GPU temperature and the slowdown, shutdown and max-operating limits. A
// limit the GPU does not report stays 0 (unknown); the field fails only when none is known
// or a read really failed. The memory temperature comes with the field values.
func (r *reader) thermal() {
	t := &r.d.Thermal
	if v, err := r.gpuTemperature(); r.ok(gpu.FieldTemperature, err) {
		t.GPUC = v
	}
	limit := func(which gonvml.TemperatureThresholds) (int, error) {
		v, err := val(r, "nvmlDeviceGetTemperatureThreshold", func() (uint32, gonvml.Return) {
			return r.dev.GetTemperatureThreshold(which)
		})
		return int(v), err
	}
	slow, err1 := limit(gonvml.TEMPERATURE_THRESHOLD_SLOWDOWN)
	shut, err2 := limit(gonvml.TEMPERATURE_THRESHOLD_SHUTDOWN)
	maxOp, err3 := limit(gonvml.TEMPERATURE_THRESHOLD_GPU_MAX)
	err := first(optional(err1), optional(err2), optional(err3))
	if err == nil && err1 != nil && err2 != nil && err3 != nil {
		err = err1 // all not supported
	}
	if r.ok(gpu.FieldTempThresholds, err) {
		t.SlowdownC, t.ShutdownC, t.MaxOpC = slow, shut, maxOp
	}
}

// gpuTemperature uses nvmlDeviceGetTemperatureV on a real library that has it (the older
// call is deprecated in NVML 13); a mock cannot build the handler that the V call needs.
func (r *reader) gpuTemperature() (int, error) {
	if realDevice(r.dev) && r.b.has("nvmlDeviceGetTemperatureV") {
		// The zero sensor type of the V1 struct is NVML_TEMPERATURE_GPU.
		t, err := val(r, "nvmlDeviceGetTemperatureV", r.dev.GetTemperatureV().V1)
		return int(t.Temperature), err
	}
	v, err := val(r, "nvmlDeviceGetTemperature", func() (uint32, gonvml.Return) {
		return r.dev.GetTemperature(gonvml.TEMPERATURE_GPU)
	})
	return int(v), err
}

// power reads draw, enforced limit and default limit, converting mW to W.
func (r *reader) power() {
	const mw = 1000.0
	draw, errDraw := val(r, "nvmlDeviceGetPowerUsage", r.dev.GetPowerUsage)
	limit, errLimit := val(r, "nvmlDeviceGetEnforcedPowerLimit", r.dev.GetEnforcedPowerLimit)
	if errors.Is(errLimit, gpu.ErrNotSupported) {
		limit, errLimit = val(r, "nvmlDeviceGetPowerManagementLimit", r.dev.GetPowerManagementLimit)
	}
	def, errDef := val(r, "nvmlDeviceGetPowerManagementDefaultLimit", r.dev.GetPowerManagementDefaultLimit)
	if r.ok(gpu.FieldPower, first(errDraw, errLimit, optional(errDef))) {
		r.d.Power = gpu.Power{DrawW: float64(draw) / mw, LimitW: float64(limit) / mw, DefaultLimitW: float64(def) / mw}
	}
}

// clockEvents reads the active clock-event reasons; drivers before R535 only have the older
// name of the same call (nvmlDeviceGetCurrentClocksThrottleReasons).
func (r *reader) clockEvents() {
	mask, err := val(r, "nvmlDeviceGetCurrentClocksEventReasons", r.dev.GetCurrentClocksEventReasons)
	if errors.Is(err, gpu.ErrNotSupported) {
		mask, err = val(r, "nvmlDeviceGetCurrentClocksThrottleReasons", r.dev.GetCurrentClocksThrottleReasons)
	}
	if r.ok(gpu.FieldClockEvents, err) {
		r.d.ClockEvents = clockEvents(mask)
	}
}

// mig reads the MIG mode; a GPU without MIG is simply not capable (no error).
func (r *reader) mig() {
	cur, pending, err := val2(r, "nvmlDeviceGetMigMode", r.dev.GetMigMode)
	switch {
	case errors.Is(err, gpu.ErrNotSupported):
		r.d.MIG = gpu.MIG{}
	case r.ok(gpu.FieldMIG, err):
		r.d.MIG = gpu.MIG{Capable: true, Enabled: cur == gonvml.DEVICE_MIG_ENABLE, PendingEnabled: pending == gonvml.DEVICE_MIG_ENABLE}
		if r.d.MIG.Enabled {
			r.migDevices()
		}
	}
}

// nvlinks reads link states from link 0 up, stopping at the first link the GPU does not
// have (not supported or invalid argument).
func (r *reader) nvlinks() {
	var links []gpu.NVLink
	for l := range gonvml.NVLINK_MAX_LINKS {
		st, err := val(r, "nvmlDeviceGetNvLinkState", func() (gonvml.EnableState, gonvml.Return) {
			return r.dev.GetNvLinkState(l)
		})
		if errors.Is(err, gpu.ErrNotSupported) || returnIs(err, gonvml.ERROR_INVALID_ARGUMENT) {
			if l == 0 {
				r.ok(gpu.FieldNVLink, fmt.Errorf("%w: no NVLink (%w)", gpu.ErrNotSupported, err))
			}
			break
		}
		if err != nil {
			r.ok(gpu.FieldNVLink, fmt.Errorf("link %d: %w", l, err))
			return
		}
		links = append(links, gpu.NVLink{Link: l, Active: st == gonvml.FEATURE_ENABLED})
	}
	r.d.NVLinks = links
}

// fabricInfo is what every version of the fabric call reports.
type fabricInfo struct {
	state   uint8
	status  uint32
	cluster [16]uint8
	clique  uint32
}

// fabric reads the NVSwitch fabric registration. A GPU outside any fabric gets State
// "not-supported" and a not-supported field error.
func (r *reader) fabric() {
	fi, err := r.fabricInfo()
	if errors.Is(err, gpu.ErrNotSupported) {
		r.d.Fabric = gpu.Fabric{State: fabricState(gonvml.GPU_FABRIC_STATE_NOT_SUPPORTED)}
		r.ok(gpu.FieldFabric, err)
		return
	}
	if !r.ok(gpu.FieldFabric, err) {
		return
	}
	f := gpu.Fabric{State: fabricState(fi.state), ClusterUUID: uuidString(fi.cluster), CliqueID: fi.clique}
	switch fi.state {
	case gonvml.GPU_FABRIC_STATE_NOT_SUPPORTED:
		r.ok(gpu.FieldFabric, fmt.Errorf("%w: the GPU reports no fabric", gpu.ErrNotSupported))
	case gonvml.GPU_FABRIC_STATE_COMPLETED:
		f.Status = "success"
		if err := toErr(gonvml.Return(fi.status)); err != nil {
			f.Status = err.Error()
		}
	}
	r.d.Fabric = f
}

// fabricInfo uses the versioned call (v3, then v2) on a real library, the deprecated v1
// call otherwise: a mock cannot build the handler that the versioned call needs.
func (r *reader) fabricInfo() (fabricInfo, error) {
	if realDevice(r.dev) && r.b.has("nvmlDeviceGetGpuFabricInfoV") {
		h := r.dev.GetGpuFabricInfoV()
		v3, err := val(r, "nvmlDeviceGetGpuFabricInfoV", h.V3)
		if !returnIs(err, gonvml.ERROR_ARGUMENT_VERSION_MISMATCH) {
			return fabricInfo{v3.State, v3.Status, v3.ClusterUuid, v3.CliqueId}, err
		}
		v2, err := val(r, "nvmlDeviceGetGpuFabricInfoV", h.V2)
		return fabricInfo{v2.State, v2.Status, v2.ClusterUuid, v2.CliqueId}, err
	}
	v1, err := val(r, "nvmlDeviceGetGpuFabricInfo", r.dev.GetGpuFabricInfo)
	return fabricInfo{v1.State, v1.Status, v1.ClusterUuid, v1.CliqueId}, err
}

// realDevice reports whether dev is a handle of go-nvml's real library (not a mock).
func realDevice(dev gonvml.Device) bool {
	return reflect.TypeOf(dev).PkgPath() == reflect.TypeOf(gonvml.SUCCESS).PkgPath()
}

// numa reads the GPU's NUMA node; -1 (with a not-supported error) where there is none.
func (r *reader) numa() {
	if v, err := val(r, "nvmlDeviceGetNumaNodeId", r.dev.GetNumaNodeId); r.ok(gpu.FieldNUMA, err) {
		r.d.NUMANode = v
	}
}
