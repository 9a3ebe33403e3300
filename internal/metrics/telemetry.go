package metrics

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpunode/gpunode/internal/gpu"
)

// recoveryActions are the driver's recovery actions every GPU reports a series for.
var recoveryActions = []gpu.RecoveryAction{gpu.RecoveryNone, gpu.RecoveryGPUReset, gpu.RecoveryNodeReboot, gpu.RecoveryDrainP2P, gpu.RecoveryDrainAndReset}

// knownRecoveryNames are the newer actions the NVML adapter names; any other value the
// backend reports is exported as "unknown", so the label stays bounded.
var knownRecoveryNames = map[gpu.RecoveryAction]bool{"recover-imex-domain": true, "bus-reset": true, "system-reboot": true}

// telemetryCollector serves the DCGM_FI_* metrics and gpunode_gpu_recovery_action from one
// telemetry read per scrape.
type telemetryCollector struct {
	src      gpu.TelemetrySource
	ids      *identities
	hostname string
	pods     PodLookup
	xids     *XIDCounter
	clock    func() time.Time
	lastOK   atomic.Int64 // Unix nanoseconds of the last read that succeeded
	recovery *prometheus.Desc
}

func newTelemetryCollector(o Options) *telemetryCollector {
	return &telemetryCollector{
		src: o.Telemetry, ids: &identities{inv: o.Inventory, clock: o.Clock}, hostname: o.Hostname,
		pods: o.Pods, xids: o.XIDs, clock: o.Clock,
		recovery: prometheus.NewDesc("gpunode_gpu_recovery_action",
			"The driver's own GPU recovery action (1 for the current one, 0 for the others).",
			[]string{"gpu", "UUID", "action"}, nil),
	}
}

func (c *telemetryCollector) name() string { return "telemetry" }

func (c *telemetryCollector) describe(ch chan<- *prometheus.Desc) {
	for _, m := range dcgmMetrics {
		ch <- m.desc
	}
	if c.xids != nil {
		ch <- xidLastDesc
	}
	ch <- c.recovery
}

// read reads the telemetry once and records when it last succeeded.
func (c *telemetryCollector) read(ctx context.Context) (*gpu.Telemetry, error) {
	t, err := c.src.Telemetry(ctx)
	if err != nil {
		return nil, err
	}
	c.lastOK.Store(c.clock().UnixNano())
	return t, nil
}

func (c *telemetryCollector) lastSuccess() time.Time {
	if n := c.lastOK.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

func (c *telemetryCollector) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	t, err := c.read(ctx)
	if err != nil {
		return fmt.Errorf("read GPU telemetry: %w", err)
	}
	ids, idErr := c.ids.lookup(ctx, t)
	labels := make([]string, len(dcgmLabels))
	for i := range t.Devices {
		d := &t.Devices[i]
		id := ids[i]
		index := strconv.Itoa(d.Index)
		pod := c.podOf(d.UUID)
		labels = append(labels[:0], index, d.UUID, id.busID, "nvidia"+index, id.model, c.hostname, id.driver,
			pod.Container, pod.Namespace, pod.Name)
		for j := range dcgmMetrics {
			m := &dcgmMetrics[j]
			if _, failed := d.Errors[m.field]; failed {
				continue // never a fake value
			}
			ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(d), labels...)
		}
		if c.xids != nil { // from the monitor: known even when the GPU stopped answering
			ch <- prometheus.MustNewConstMetric(xidLastDesc, gauge, float64(c.xids.last(d.UUID)), labels...)
		}
		if _, failed := d.Errors[gpu.FieldRecoveryAction]; !failed {
			c.collectRecovery(ch, index, d.UUID, d.RecoveryAction)
		}
	}
	return idErr
}

// collectRecovery is a state set over the known actions, plus the current one if it is not
// among them.
func (c *telemetryCollector) collectRecovery(ch chan<- prometheus.Metric, index, uuid string, current gpu.RecoveryAction) {
	known := false
	for _, a := range recoveryActions {
		v := 0.0
		if a == current {
			v, known = 1, true
		}
		ch <- prometheus.MustNewConstMetric(c.recovery, gauge, v, index, uuid, string(a))
	}
	if !known {
		if !knownRecoveryNames[current] {
			current = "unknown"
		}
		ch <- prometheus.MustNewConstMetric(c.recovery, gauge, 1, index, uuid, string(current))
	}
}

// podOf is the container holding the GPU: the first in (namespace, pod, container) order
// when several share it, the zero Pod when none does.
func (c *telemetryCollector) podOf(uuid string) Pod {
	if c.pods == nil || uuid == "" {
		return Pod{}
	}
	var best Pod
	for i, p := range c.pods.PodsFor(uuid) {
		if i == 0 || p.Namespace < best.Namespace ||
			(p.Namespace == best.Namespace && (p.Name < best.Name || (p.Name == best.Name && p.Container < best.Container))) {
			best = p
		}
	}
	return best
}

// identity is what the labels need of a GPU beyond its telemetry.
type identity struct {
	model, busID, driver string
}

// identities caches the devices' identities from the inventory, by UUID; it reads the
// inventory again (at most every refreshEvery) when a GPU it does not know shows up.
type identities struct {
	inv   Inventory
	clock func() time.Time

	mu      sync.Mutex
	byUUID  map[string]identity
	byIndex map[int]identity
	read    time.Time // last inventory read attempt
	readErr error     // its error
}

const refreshEvery = 30 * time.Second

// lookup returns the identity of each telemetry device, in order. A GPU the inventory does
// not list gets empty labels, and the error says why.
func (s *identities) lookup(ctx context.Context, t *gpu.Telemetry) ([]identity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.missing(t) && (s.read.IsZero() || s.clock().Sub(s.read) >= refreshEvery) {
		s.read = s.clock()
		s.readErr = s.refresh(ctx)
	}
	var err error
	if s.missing(t) {
		err = s.readErr
		if err == nil {
			err = errors.New("a GPU is missing from the GPU inventory: its labels are empty until the next inventory read")
		}
	}
	out := make([]identity, len(t.Devices))
	for i, d := range t.Devices {
		id, ok := s.byUUID[d.UUID]
		if !ok || d.UUID == "" {
			id = s.byIndex[d.Index]
		}
		out[i] = id
	}
	return out, err
}

func (s *identities) missing(t *gpu.Telemetry) bool {
	for _, d := range t.Devices {
		if _, ok := s.byUUID[d.UUID]; !ok && d.UUID != "" {
			return true
		}
		if _, ok := s.byIndex[d.Index]; !ok && d.UUID == "" {
			return true
		}
	}
	return false
}

func (s *identities) refresh(ctx context.Context) error {
	snap, err := s.inv.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("read the GPU inventory for labels: %w", err)
	}
	s.byUUID = make(map[string]identity, len(snap.Devices))
	s.byIndex = make(map[int]identity, len(snap.Devices))
	for _, d := range snap.Devices {
		id := identity{model: d.Name, busID: d.PCI.BusID, driver: snap.Driver.Version}
		if d.UUID != "" {
			s.byUUID[d.UUID] = id
		}
		s.byIndex[d.Index] = id
	}
	return nil
}
