package kmsg

import (
	"testing"
	"time"
)

// The pipeline target is 500,000 kernel-log lines a second on one core, so parsing a line
// must stay well under 2 µs. Run: go test -run '^$' -bench . -benchmem ./internal/kmsg/

func BenchmarkParseRecord(b *testing.B) {
	rec := []byte("4,123456,16450076435595,-;" + xid79 + "\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRecord(rec); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

func BenchmarkParseTextLine(b *testing.B) {
	ref := time.Date(2025, 5, 20, 12, 0, 0, 0, time.UTC)
	for _, bc := range []struct{ name, line string }{
		{"dmesg", "[16450076.435595] " + xid79},
		{"dmesg-T", "[Sun Feb 23 16:24:18 2025] " + xid79},
		{"syslog", "May 18 19:02:39 gpu-node-7 kernel: [16450076.435595] " + xid79},
		{"short-iso-precise", "2025-05-18T19:02:39.123456+0000 gpu-node-7 kernel: " + xid79},
		{"kmsg", "4,123456,16450076435595,-;" + xid79},
		{"bare", xid79},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if l, ok := ParseTextLine(bc.line, ref); !ok || l.Message != xid79 {
					b.Fatalf("%+v", l)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}
