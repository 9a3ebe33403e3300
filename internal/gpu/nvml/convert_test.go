package nvml

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
)

func TestToErr(t *testing.T) {
	tests := []struct {
		name         string
		ret          gonvml.Return
		wantNil      bool
		notSupported bool
		lost         bool
		text         string
	}{
		{name: "success is no error", ret: gonvml.SUCCESS, wantNil: true},
		{name: "not supported matches ErrNotSupported", ret: gonvml.ERROR_NOT_SUPPORTED, notSupported: true, text: "ERROR_NOT_SUPPORTED"},
		{name: "a function missing from the library matches ErrNotSupported", ret: gonvml.ERROR_FUNCTION_NOT_FOUND, notSupported: true, text: "ERROR_FUNCTION_NOT_FOUND"},
		{name: "a lost GPU matches ErrGPULost", ret: gonvml.ERROR_GPU_IS_LOST, lost: true, text: "ERROR_GPU_IS_LOST"},
		{name: "any other return keeps NVML's message and matches neither", ret: gonvml.ERROR_NO_PERMISSION, text: "ERROR_NO_PERMISSION"},
		{name: "an unknown return is still an error", ret: gonvml.Return(9999), text: "unknown return value: 9999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := toErr(tt.ret)
			if tt.wantNil {
				if err != nil {
					t.Fatalf("toErr(%d) = %v, want nil", tt.ret, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("toErr(%d) = nil, want an error", tt.ret)
			}
			if got := errors.Is(err, gpu.ErrNotSupported); got != tt.notSupported {
				t.Errorf("errors.Is(ErrNotSupported) = %v, want %v", got, tt.notSupported)
			}
			if got := errors.Is(err, gpu.ErrGPULost); got != tt.lost {
				t.Errorf("errors.Is(ErrGPULost) = %v, want %v", got, tt.lost)
			}
			if err.Error() != tt.text {
				t.Errorf("message %q, want %q", err.Error(), tt.text)
			}
			if !returnIs(err, tt.ret) {
				t.Errorf("returnIs(err, %d) = false", tt.ret)
			}
		})
	}
}

func TestGuardTurnsPanicsIntoErrors(t *testing.T) {
	tests := []struct {
		name         string
		fn           func() gonvml.Return
		notSupported bool
		text         string
	}{
		{
			name: "a mock method without a Func is not supported",
			fn: func() gonvml.Return {
				panic("Device.GetSerialFunc: method is nil but Device.GetSerial was just called")
			},
			notSupported: true,
			text:         "nvmlX: not supported: not implemented by this NVML library (Device.GetSerialFunc: method is nil but Device.GetSerial was just called)",
		},
		{
			name: "a runtime error is a failure, not a skip",
			fn: func() gonvml.Return {
				links := []gonvml.Return{gonvml.SUCCESS}
				return links[len(links)+2]
			},
			text: "nvmlX: panic: runtime error: index out of range [3] with length 1",
		},
		{
			name: "a failing return is named after the call",
			fn:   func() gonvml.Return { return gonvml.ERROR_TIMEOUT },
			text: "nvmlX: ERROR_TIMEOUT",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := guard("nvmlX", tt.fn)
			if err == nil {
				t.Fatal("guard returned nil")
			}
			if got := errors.Is(err, gpu.ErrNotSupported); got != tt.notSupported {
				t.Errorf("errors.Is(ErrNotSupported) = %v, want %v", got, tt.notSupported)
			}
			if err.Error() != tt.text {
				t.Errorf("message %q, want %q", err.Error(), tt.text)
			}
		})
	}
}

func TestCUDAVersion(t *testing.T) {
	tests := []struct {
		name string
		in   int
		want string
	}{
		{name: "12040 is 12.4", in: 12040, want: "12.4"},
		{name: "13000 is 13.0", in: 13000, want: "13.0"},
		{name: "12090 is 12.9", in: 12090, want: "12.9"},
		{name: "zero is unknown", in: 0, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cudaVersion(tt.in); got != tt.want {
				t.Errorf("cudaVersion(%d) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestClockEvents(t *testing.T) {
	tests := []struct {
		name string
		mask uint64
		want []gpu.ClockEvent
	}{
		{name: "no bit is no event", mask: 0, want: nil},
		{name: "idle alone", mask: gonvml.ClocksEventReasonGpuIdle, want: []gpu.ClockEvent{gpu.ClockEventIdle}},
		{
			name: "hardware slowdown with thermal slowdown come out lowest bit first",
			mask: gonvml.ClocksThrottleReasonHwThermalSlowdown | gonvml.ClocksThrottleReasonHwSlowdown,
			want: []gpu.ClockEvent{gpu.ClockEventHWSlowdown, gpu.ClockEventHWThermal},
		},
		{name: "board limit has a name of its own", mask: gonvml.ClocksEventReasonBoardLimit, want: []gpu.ClockEvent{"board-limit"}},
		{name: "unknown bits are kept", mask: 1<<20 | gonvml.ClocksEventReasonSwPowerCap, want: []gpu.ClockEvent{gpu.ClockEventSWPowerCap, "unknown-0x100000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clockEvents(tt.mask); !slices.Equal(got, tt.want) {
				t.Errorf("clockEvents(%#x) = %v, want %v", tt.mask, got, tt.want)
			}
		})
	}
}

func TestRecoveryAction(t *testing.T) {
	tests := []struct {
		name string
		in   uint64
		want gpu.RecoveryAction
	}{
		{name: "0 is none", in: 0, want: gpu.RecoveryNone},
		{name: "1 is gpu reset", in: 1, want: gpu.RecoveryGPUReset},
		{name: "2 is node reboot", in: 2, want: gpu.RecoveryNodeReboot},
		{name: "3 is drain p2p", in: 3, want: gpu.RecoveryDrainP2P},
		{name: "4 is drain and reset", in: 4, want: gpu.RecoveryDrainAndReset},
		{name: "5 is recover the IMEX domain", in: 5, want: "recover-imex-domain"},
		{name: "an unknown value keeps its number", in: 42, want: "unknown-42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := recoveryAction(tt.in); got != tt.want {
				t.Errorf("recoveryAction(%d) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{name: "hopper is lower case", got: architectureName(gonvml.DEVICE_ARCH_HOPPER), want: "hopper"},
		{name: "ada is lower case", got: architectureName(gonvml.DEVICE_ARCH_ADA), want: "ada"},
		{name: "an unknown architecture keeps its number", got: architectureName(77), want: "arch-77"},
		{name: "the NVIDIA brand", got: brandName(gonvml.BRAND_NVIDIA), want: "NVIDIA"},
		{name: "a completed fabric", got: fabricState(gonvml.GPU_FABRIC_STATE_COMPLETED), want: "completed"},
		{name: "a C string stops at NUL", got: cString([]int8{'0', '0', ':', '1', 0, 'x'}), want: "00:1"},
		{name: "a zero cluster UUID is empty", got: uuidString([16]uint8{}), want: ""},
		{name: "a cluster UUID is formatted", got: uuidString([16]uint8{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), want: "deadbeef-0102-0304-0506-0708090a0b0c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestDecodeValue(t *testing.T) {
	le := func(n int, v uint64) (b [8]byte) {
		switch n {
		case 2:
			binary.LittleEndian.PutUint16(b[:], uint16(v))
		case 4:
			binary.LittleEndian.PutUint32(b[:], uint32(v))
		default:
			binary.LittleEndian.PutUint64(b[:], v)
		}
		return b
	}
	tests := []struct {
		name    string
		typ     gonvml.ValueType
		b       [8]byte
		want    uint64
		wantErr bool
	}{
		{name: "an unsigned int", typ: gonvml.VALUE_TYPE_UNSIGNED_INT, b: le(4, 2), want: 2},
		{name: "an unsigned long long", typ: gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG, b: le(8, 1<<40), want: 1 << 40},
		{name: "an unsigned short", typ: gonvml.VALUE_TYPE_UNSIGNED_SHORT, b: le(2, 7), want: 7},
		{name: "a signed int", typ: gonvml.VALUE_TYPE_SIGNED_INT, b: le(4, 45), want: 45},
		{name: "a negative signed int is an error", typ: gonvml.VALUE_TYPE_SIGNED_INT, b: le(4, 0xffffffff), wantErr: true},
		{name: "a double", typ: gonvml.VALUE_TYPE_DOUBLE, b: le(8, math.Float64bits(3)), want: 3},
		{name: "an unknown type is an error", typ: gonvml.VALUE_TYPE_COUNT, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeValue(tt.typ, tt.b)
			if (err != nil) != tt.wantErr {
				t.Fatalf("decodeValue error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("decodeValue = %d, want %d", got, tt.want)
			}
		})
	}
}
