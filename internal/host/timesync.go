package host

import "fmt"

// Time sync states.
const (
	TimeSynchronized    = "synchronized"
	TimeNotSynchronized = "not-synchronized"
	TimeUnknown         = "unknown"
)

// TimeSync is whether the system clock is synchronized, and by what.
type TimeSync struct {
	// State is TimeSynchronized, TimeNotSynchronized or TimeUnknown.
	State string `json:"state"`
	// Sources are the time daemons found: "systemd-timesyncd", "chrony", "ntpd".
	Sources []string `json:"sources,omitempty"`
	// Evidence says what decided State: "adjtimex" (the kernel's clock status, as
	// timedatectl shows it) or the file that did.
	Evidence string `json:"evidence,omitempty"`
}

// timesyncdFlag exists while systemd-timesyncd has synchronized the clock (systemd >= 239).
const timesyncdFlag = "/run/systemd/timesync/synchronized"

// timeSources are the runtime files each daemon leaves while it runs.
var timeSources = []struct {
	name  string
	paths []string
}{
	{"systemd-timesyncd", []string{"/run/systemd/timesync"}},
	{"chrony", []string{"/run/chrony", "/var/run/chrony"}},
	{"ntpd", []string{"/run/ntpd.pid", "/var/run/ntpd.pid"}},
}

// readTimeSync decides the clock state: the kernel's verdict when ClockSynced answers,
// else systemd-timesyncd's flag file, else unknown.
func (r *Reader) readTimeSync(f *Facts) {
	t := TimeSync{State: TimeUnknown}
	for _, s := range timeSources {
		for _, p := range s.paths {
			if r.exists(p) {
				t.Sources = append(t.Sources, s.name)
				break
			}
		}
	}
	kernelKnown := false
	if r.ClockSynced != nil {
		synced, err := r.ClockSynced()
		if err != nil {
			f.setErr(FactTimeSync, fmt.Errorf("adjtimex: %w", err))
		} else {
			kernelKnown = true
			t.State, t.Evidence = TimeNotSynchronized, "adjtimex"
			if synced {
				t.State = TimeSynchronized
			}
		}
	}
	if !kernelKnown && r.exists(timesyncdFlag) {
		t.State, t.Evidence = TimeSynchronized, timesyncdFlag
	}
	f.TimeSync = t
}
