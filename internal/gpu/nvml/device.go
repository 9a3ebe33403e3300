package nvml

import (
	"errors"
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

// fieldBrand records a failed brand read; package gpu has no Field for the brand.
const fieldBrand gpu.Field = "brand"

// deviceFields are the facts of a device; all are marked failed when the device cannot be
// opened, so that no check reads a zero value as a healthy one.
var deviceFields = []gpu.Field{
	gpu.FieldUUID, gpu.FieldName, gpu.FieldSerial, fieldBrand, gpu.FieldArchitecture,
	gpu.FieldComputeCap, gpu.FieldMemory, gpu.FieldPCI, gpu.FieldPCIeLink, gpu.FieldPCIeReplay,
	gpu.FieldVBIOS, gpu.FieldECCMode, gpu.FieldECCErrors, gpu.FieldRetiredPages,
	gpu.FieldRowRemap, gpu.FieldTemperature, gpu.FieldTempThresholds, gpu.FieldPower,
	gpu.FieldClockEvents, gpu.FieldPersistence, gpu.FieldMIG, gpu.FieldNVLink, gpu.FieldFabric,
	gpu.FieldRecoveryAction, gpu.FieldNUMA, gpu.FieldDevice,
}

// readDevice reads every fact of device i. It always returns the device, with Index set.
func (b *Backend) readDevice(i int) gpu.Device {
	d := gpu.Device{Index: i, NUMANode: -1}
	dev, err := get("nvmlDeviceGetHandleByIndex", func() (gonvml.Device, gonvml.Return) {
		return b.lib.DeviceGetHandleByIndex(i)
	})
	if err == nil && dev == nil {
		err = errors.New("nvmlDeviceGetHandleByIndex: no handle returned")
	}
	if err != nil {
		err = fmt.Errorf("opening GPU %d: %w", i, err)
		for _, f := range deviceFields {
			d.SetErr(f, err)
		}
		return d
	}
	r := &reader{b: b, dev: dev, d: &d}
	r.identity()
	r.memory()
	r.pci()
	r.ecc()
	r.retiredPages()
	r.rowRemap()
	r.thermal()
	r.power()
	r.clockEvents()
	r.mig()
	r.nvlinks()
	r.fabric()
	r.fieldValues()
	r.numa()
	return d
}

func (r *reader) identity() {
	d, dev := r.d, r.dev
	if v, err := val(r, "nvmlDeviceGetUUID", dev.GetUUID); r.ok(gpu.FieldUUID, err) {
		d.UUID = v
	}
	if v, err := val(r, "nvmlDeviceGetName", dev.GetName); r.ok(gpu.FieldName, err) {
		d.Name = v
	}
	if v, err := val(r, "nvmlDeviceGetSerial", dev.GetSerial); r.ok(gpu.FieldSerial, err) {
		d.Serial = v
	}
	if v, err := val(r, "nvmlDeviceGetBrand", dev.GetBrand); r.ok(fieldBrand, err) {
		d.Brand = brandName(v)
	}
	if v, err := val(r, "nvmlDeviceGetArchitecture", dev.GetArchitecture); r.ok(gpu.FieldArchitecture, err) {
		d.Architecture = architectureName(v)
	}
	if major, minor, err := val2(r, "nvmlDeviceGetCudaComputeCapability", dev.GetCudaComputeCapability); r.ok(gpu.FieldComputeCap, err) {
		d.ComputeCapability = gpu.ComputeCapability{Major: major, Minor: minor}
	}
	if v, err := val(r, "nvmlDeviceGetVbiosVersion", dev.GetVbiosVersion); r.ok(gpu.FieldVBIOS, err) {
		d.VBIOS = v
	}
	if v, err := val(r, "nvmlDeviceGetPersistenceMode", dev.GetPersistenceMode); r.ok(gpu.FieldPersistence, err) {
		d.PersistenceMode = v == gonvml.FEATURE_ENABLED
	}
}

// memory prefers nvmlDeviceGetMemoryInfo_v2, whose "used" leaves out the driver's reserve.
func (r *reader) memory() {
	const mib = 1 << 20
	m2, err := val(r, "nvmlDeviceGetMemoryInfo_v2", r.dev.GetMemoryInfo_v2)
	if err == nil {
		r.d.Memory = gpu.Memory{TotalMiB: m2.Total / mib, UsedMiB: m2.Used / mib}
		return
	}
	if !errors.Is(err, gpu.ErrNotSupported) {
		r.ok(gpu.FieldMemory, err)
		return
	}
	if m, err := val(r, "nvmlDeviceGetMemoryInfo", r.dev.GetMemoryInfo); r.ok(gpu.FieldMemory, err) {
		r.d.Memory = gpu.Memory{TotalMiB: m.Total / mib, UsedMiB: m.Used / mib}
	}
}

func (r *reader) pci() {
	p, dev := &r.d.PCI, r.dev
	if info, err := val(r, "nvmlDeviceGetPciInfo", dev.GetPciInfo); r.ok(gpu.FieldPCI, err) {
		p.BusID = cString(info.BusId[:])
		p.DeviceID = info.PciDeviceId
		p.SubsystemID = info.PciSubSystemId
	}
	gen, errGen := val(r, "nvmlDeviceGetCurrPcieLinkGeneration", dev.GetCurrPcieLinkGeneration)
	genMax, errGenMax := val(r, "nvmlDeviceGetMaxPcieLinkGeneration", dev.GetMaxPcieLinkGeneration)
	genDev, errGenDev := val(r, "nvmlDeviceGetGpuMaxPcieLinkGeneration", dev.GetGpuMaxPcieLinkGeneration)
	width, errWidth := val(r, "nvmlDeviceGetCurrPcieLinkWidth", dev.GetCurrPcieLinkWidth)
	widthMax, errWidthMax := val(r, "nvmlDeviceGetMaxPcieLinkWidth", dev.GetMaxPcieLinkWidth)
	if r.ok(gpu.FieldPCIeLink, first(errGen, errGenMax, optional(errGenDev), errWidth, errWidthMax)) {
		p.LinkGen, p.LinkGenMax, p.LinkGenMaxDevice = gen, genMax, genDev
		p.LinkWidth, p.LinkWidthMax = width, widthMax
	}
	if v, err := val(r, "nvmlDeviceGetPcieReplayCounter", dev.GetPcieReplayCounter); r.ok(gpu.FieldPCIeReplay, err) {
		p.ReplayCounter = uint64(v)
	}
}

func (r *reader) ecc() {
	e := &r.d.ECC
	if cur, pending, err := val2(r, "nvmlDeviceGetEccMode", r.dev.GetEccMode); r.ok(gpu.FieldECCMode, err) {
		e.Enabled = cur == gonvml.FEATURE_ENABLED
		e.PendingEnabled = pending == gonvml.FEATURE_ENABLED
	}
	count := func(t gonvml.MemoryErrorType, c gonvml.EccCounterType) (uint64, error) {
		return val(r, "nvmlDeviceGetTotalEccErrors", func() (uint64, gonvml.Return) {
			return r.dev.GetTotalEccErrors(t, c)
		})
	}
	vc, err1 := count(gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.VOLATILE_ECC)
	vu, err2 := count(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC)
	ac, err3 := count(gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.AGGREGATE_ECC)
	au, err4 := count(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.AGGREGATE_ECC)
	if r.ok(gpu.FieldECCErrors, first(err1, err2, err3, err4)) {
		e.VolatileCorrected, e.VolatileUncorrected = vc, vu
		e.AggregateCorrected, e.AggregateUncorrected = ac, au
	}
}

// retiredPages reads page retirement (pre-Ampere; Ampere and later report not supported).
func (r *reader) retiredPages() {
	pages := func(c gonvml.PageRetirementCause) (int, error) {
		addrs, err := val(r, "nvmlDeviceGetRetiredPages", func() ([]uint64, gonvml.Return) {
			return r.dev.GetRetiredPages(c)
		})
		return len(addrs), err
	}
	sbe, err1 := pages(gonvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
	dbe, err2 := pages(gonvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
	pending, err3 := val(r, "nvmlDeviceGetRetiredPagesPendingStatus", r.dev.GetRetiredPagesPendingStatus)
	if r.ok(gpu.FieldRetiredPages, first(err1, err2, err3)) {
		r.d.RetiredPages = gpu.RetiredPages{SingleBit: sbe, DoubleBit: dbe, Pending: pending == gonvml.FEATURE_ENABLED}
	}
}

func (r *reader) rowRemap() {
	var rr gpu.RowRemap
	err := r.call("nvmlDeviceGetRemappedRows", func() (ret gonvml.Return) {
		rr.Correctable, rr.Uncorrectable, rr.Pending, rr.Failure, ret = r.dev.GetRemappedRows()
		return ret
	})
	if r.ok(gpu.FieldRowRemap, err) {
		r.d.RowRemap = rr
	}
}
