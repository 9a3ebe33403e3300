package xid

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// mixedLog is a realistic kernel log: mostly other drivers' and subsystems' lines, a few
// driver lines that are no event, and about one XID report in thirty lines.
func mixedLog(n int) []string {
	other := []string{
		"usb 1-1: new high-speed USB device number %d using xhci_hcd",
		"EXT4-fs (nvme0n1p2): mounted filesystem %d with ordered data mode. Quota mode: none.",
		"IPv6: ADDRCONF(NETDEV_CHANGE): eth%d: link becomes ready",
		"audit: type=1400 audit(1700000000.000:%d): apparmor=\"DENIED\" operation=\"open\" profile=\"snap.lxd\" name=\"/proc/sys/kernel/\"",
		"mlx5_core 0000:%02x:00.0: mlx5_pcie_event:301:(pid 812): PCIe slot advertised sufficient power (75W).",
		"nvidia-uvm: Loaded the UVM driver, major device number %d.",
		"cgroup: fork rejected by pids controller in /kubepods.slice/kubepods-burstable.slice/pod%d",
		"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  (build %d)",
	}
	xids := []string{
		"NVRM: Xid (PCI:0000:%02x:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
		"NVRM: Xid (PCI:0000:%02x:00 GPU-I:02 GPU-CI:01): 31, pid=2345, name=python3, channel 0x00000009, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f12_34560000",
		"NVRM: Xid (PCI:0000:%02x:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
		"nvidia-nvswitch3: SXid (PCI:0000:%02x:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)",
	}
	lines := make([]string, n)
	for i := range lines {
		ts := fmt.Sprintf("[%6d.%06d] ", 1000+i/100, i%1000000)
		if i%30 == 29 {
			lines[i] = ts + fmt.Sprintf(xids[(i/30)%len(xids)], i%256)
		} else {
			lines[i] = ts + fmt.Sprintf(other[i%len(other)], i)
		}
	}
	return lines
}

// BenchmarkScanner measures kernel-log scanning; the target is >= 500,000 lines/s on one
// core: go test -run '^$' -bench Scanner -cpu 1 ./internal/xid/
func BenchmarkScanner(b *testing.B) {
	lines := mixedLog(30000)
	b.ReportAllocs()
	b.ResetTimer()
	events := 0
	for b.Loop() {
		var s Scanner
		for _, l := range lines {
			if _, ok := s.Line(l); ok {
				events++
			}
		}
	}
	b.StopTimer()
	if events == 0 {
		b.Fatal("no events in the mixed log")
	}
	b.ReportMetric(float64(len(lines))*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkScanAll adds reading the text (bufio, one string per line) to the scanning.
func BenchmarkScanAll(b *testing.B) {
	text := []byte(strings.Join(mixedLog(30000), "\n") + "\n")
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := ScanAll(context.Background(), bytes.NewReader(text), "bench"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(30000*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkScannerXIDFlood is the worst case: every line an XID report (one real report had
// 800,000 lines of XID 95).
func BenchmarkScannerXIDFlood(b *testing.B) {
	line := "[16450080.100000] NVRM: Xid (PCI:0000:bb:00): 95, pid=7062, name=torchrun, Uncontained: LTC TAG (0x2,0x0). RST: Yes, D-RST: No"
	var s Scanner
	for b.Loop() {
		if _, ok := s.Line(line); !ok {
			b.Fatal("not an event")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
