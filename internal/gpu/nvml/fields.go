package nvml

import (
	"encoding/binary"
	"fmt"
	"math"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

// fieldValues reads, in one nvmlDeviceGetFieldValues call, the driver's recovery action
// (FI_DEV_GET_GPU_RECOVERY_ACTION, R565 and later) and the HBM temperature
// (FI_DEV_MEMORY_TEMP, 0 = unknown when the GPU does not report it).
func (r *reader) fieldValues() {
	vals := []gonvml.FieldValue{
		{FieldId: gonvml.FI_DEV_GET_GPU_RECOVERY_ACTION},
		{FieldId: gonvml.FI_DEV_MEMORY_TEMP},
	}
	err := r.call("nvmlDeviceGetFieldValues", func() gonvml.Return { return r.dev.GetFieldValues(vals) })
	action, errAction := fieldValue(vals[0], err)
	if r.ok(gpu.FieldRecoveryAction, errAction) {
		r.d.RecoveryAction = recoveryAction(action)
	}
	memC, errMem := fieldValue(vals[1], err)
	if r.ok(gpu.FieldTemperature, optional(errMem)) {
		r.d.Thermal.MemoryC = int(memC)
	}
}

// fieldValue decodes one field value as an unsigned integer. callErr is the error of the
// whole call; a driver that does not know the field id answers "invalid argument" for it,
// which is reported as not supported.
func fieldValue(v gonvml.FieldValue, callErr error) (uint64, error) {
	if callErr != nil {
		return 0, fmt.Errorf("field %d: %w", v.FieldId, callErr)
	}
	ret := gonvml.Return(v.NvmlReturn)
	if ret == gonvml.ERROR_INVALID_ARGUMENT {
		return 0, fmt.Errorf("field %d: %w: unknown to this driver (%w)", v.FieldId, gpu.ErrNotSupported, toErr(ret))
	}
	if err := toErr(ret); err != nil {
		return 0, fmt.Errorf("field %d: %w", v.FieldId, err)
	}
	return decodeValue(gonvml.ValueType(v.ValueType), v.Value)
}

// decodeValue reads the value union of a field value (native byte order is little endian
// on every platform NVML ships for).
func decodeValue(t gonvml.ValueType, b [8]byte) (uint64, error) {
	switch t {
	case gonvml.VALUE_TYPE_UNSIGNED_INT:
		return uint64(binary.LittleEndian.Uint32(b[:4])), nil
	case gonvml.VALUE_TYPE_UNSIGNED_LONG, gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return binary.LittleEndian.Uint64(b[:]), nil
	case gonvml.VALUE_TYPE_UNSIGNED_SHORT:
		return uint64(binary.LittleEndian.Uint16(b[:2])), nil
	case gonvml.VALUE_TYPE_SIGNED_INT:
		if v := int32(binary.LittleEndian.Uint32(b[:4])); v >= 0 {
			return uint64(v), nil
		}
	case gonvml.VALUE_TYPE_SIGNED_LONG_LONG:
		if v := int64(binary.LittleEndian.Uint64(b[:])); v >= 0 {
			return uint64(v), nil
		}
	case gonvml.VALUE_TYPE_DOUBLE:
		if f := math.Float64frombits(binary.LittleEndian.Uint64(b[:])); f >= 0 && f < math.MaxUint64 {
			return uint64(f), nil
		}
	default:
		return 0, fmt.Errorf("field value of unknown type %d", t)
	}
	return 0, fmt.Errorf("field value of type %d is negative or out of range", t)
}
