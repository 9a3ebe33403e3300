package monitor

import (
	"reflect"
	"sync"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/rules"
)

func TestTheMonitorsThresholdsAreTheConfiguredOnesUntilSet(t *testing.T) {
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	custom := rules.DefaultThresholds()
	custom.MaxRetiredPages = 30
	cases := []struct {
		name string
		cfg  rules.Thresholds
		set  *rules.Thresholds
		want rules.Thresholds
	}{
		{"no thresholds configured are the defaults", rules.Thresholds{}, nil, rules.DefaultThresholds()},
		{"configured thresholds are kept", custom, nil, custom},
		{"set thresholds replace the configured ones", rules.Thresholds{}, &custom, custom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(Config{Backend: b, Thresholds: tc.cfg})
			if err != nil {
				t.Fatal(err)
			}
			if tc.set != nil {
				m.SetThresholds(*tc.set)
			}
			if got := m.Thresholds(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Thresholds() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTheMonitorsThresholdsAreItsOwnCopy(t *testing.T) {
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	in := rules.DefaultThresholds()
	m.SetThresholds(in)
	in.IgnoreXIDs[0] = 79 // the caller's slice, changed after the call
	out := m.Thresholds()
	out.IgnoreXIDs[1] = 79 // the copy returned, changed
	if got := m.Thresholds().IgnoreXIDs; got[0] == 79 || got[1] == 79 {
		t.Errorf("the monitor's ignored XIDs %v changed with a caller's slice", got)
	}
}

// Run with -race: a policy set while the monitor polls is a data race no more.
func TestThresholdsCanBeSetWhileTheMonitorReadsThem(t *testing.T) {
	b, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() { defer wg.Done(); th := rules.DefaultThresholds(); th.MaxRetiredPages = i; m.SetThresholds(th) }()
		go func() { defer wg.Done(); m.poll(t.Context()) }()
	}
	wg.Wait()
	if got := m.Thresholds().MaxRetiredPages; got < 0 || got > 3 {
		t.Errorf("thresholds %d, want one of those set", got)
	}
}
