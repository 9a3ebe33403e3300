package kmsg

import (
	"testing"
)

// The pipeline target is 500,000 kernel-log lines a second on one core, so parsing a line
// must stay well under 2 µs. Run: go test -run '^$' -bench . -benchmem ./internal/kmsg/

const xid79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."

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
