package dra

import (
	"context"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// healthResend is how often the health stream repeats an unchanged report: the kubelet
// takes a device's health as unknown after 30 s without one.
const healthResend = 10 * time.Second

// WatchHealthStatus implements kubeletplugin.DRAPlugin: every device's health now, then
// again at each change and every healthResend, until ctx ends.
func (p *Plugin) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	tick := time.NewTicker(healthResend)
	defer tick.Stop()
	for {
		p.mu.Lock()
		rep, gen := HealthReport(p.cfg.NodeName, p.inv, time.Now()), p.gen
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case reports <- rep:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-gen:
		case <-tick.C:
		}
	}
}

// HealthReport is the health of every device of inv: Unhealthy with the taint's reason
// while tainted, else Healthy.
func HealthReport(pool string, inv Inventory, now time.Time) kubeletplugin.DeviceHealthReport {
	rep := kubeletplugin.DeviceHealthReport{}
	for _, d := range inv.Devices {
		e := inv.Entries[d.Name]
		h := kubeletplugin.DeviceHealth{PoolName: pool, DeviceName: d.Name, Health: kubeletplugin.HealthStatusHealthy, LastUpdated: now}
		if e.Taint != nil {
			h.Health, h.Message = kubeletplugin.HealthStatusUnhealthy, e.Message
		}
		rep.Devices = append(rep.Devices, h)
	}
	return rep
}
