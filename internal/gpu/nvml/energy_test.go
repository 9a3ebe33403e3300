package nvml

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// energyMock is a DGX H200 whose GPUs answer every telemetry call; energyReads counts the
// field-value calls that ask for the energy counter, which grows by 1000 mJ per read.
func energyMock(t *testing.T) (*Backend, *atomic.Int32) {
	t.Helper()
	srv := dgxh200.New()
	var energyReads atomic.Int32
	for _, d := range srv.Devices {
		dev := d.(*server.Device)
		telemetryDevice(dev, busyFields(), nil)
		answer := dev.GetFieldValuesFunc
		var mj atomic.Uint64
		dev.GetFieldValuesFunc = func(vals []gonvml.FieldValue) gonvml.Return {
			ret := answer(vals)
			for i := range vals {
				if vals[i].FieldId == gonvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION {
					energyReads.Add(1)
					putU64(&vals[i], mj.Add(1000))
				}
			}
			return ret
		}
	}
	b, err := New(WithLibrary(srv))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, &energyReads
}

func putU64(v *gonvml.FieldValue, x uint64) {
	v.ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
	for i := range 8 {
		v.Value[i] = byte(x >> (8 * i))
	}
}

func TestScrapeTelemetryReadsTheSlowEnergyCounterOffTheScrapePath(t *testing.T) {
	b, reads := energyMock(t)
	s := NewScrapeTelemetry(b, time.Hour)
	ctx := context.Background()
	first, err := s.Telemetry(ctx)
	if err != nil {
		t.Fatalf("Telemetry: %v", err)
	}
	if reads.Load() != 8 || first.Devices[0].EnergyMJ != 1000 {
		t.Fatalf("first scrape: %d energy reads, GPU 0 at %d mJ; want each GPU read once, at 1000 mJ", reads.Load(), first.Devices[0].EnergyMJ)
	}
	second, err := s.Telemetry(ctx)
	if err != nil {
		t.Fatalf("Telemetry: %v", err)
	}
	if reads.Load() != 8 || second.Devices[0].EnergyMJ != 1000 {
		t.Errorf("second scrape read the energy counter again (%d reads, %d mJ)", reads.Load(), second.Devices[0].EnergyMJ)
	}
	if len(second.Devices[0].Errors) != 0 || second.Devices[0].SMClockMHz != 1980 {
		t.Errorf("the other values are not read on every scrape: %+v", second.Devices[0])
	}
	s.refresh(ctx)
	third, _ := s.Telemetry(ctx)
	if reads.Load() != 16 || third.Devices[7].EnergyMJ != 2000 {
		t.Errorf("after a refresh: %d reads, GPU 7 at %d mJ; want 16 reads and 2000 mJ", reads.Load(), third.Devices[7].EnergyMJ)
	}
}

func TestScrapeTelemetryRefreshesUntilItsContextEnds(t *testing.T) {
	b, reads := energyMock(t)
	s := NewScrapeTelemetry(b, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for reads.Load() < 16 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if reads.Load() < 16 {
		t.Errorf("%d energy reads in 5 s of refreshing every 10 ms", reads.Load())
	}
	tel, err := s.Telemetry(context.Background())
	if err != nil || tel.Devices[0].EnergyMJ < 2000 {
		t.Errorf("Telemetry after refreshes: %v, GPU 0 at %d mJ", err, tel.Devices[0].EnergyMJ)
	}
}
