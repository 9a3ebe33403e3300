package evidence

import (
	"context"
	"testing"
	"time"
)

// BenchmarkWrite writes the bundle of an 8-GPU node with two full snapshots and 500
// kernel-log records, retention included, and reports the archive's size.
func BenchmarkWrite(b *testing.B) {
	c := fixture(b)
	c.Kernel = kernelLines(500)
	c.Snapshots = append(c.Snapshots, c.Snapshots[0])
	s := &Store{Dir: b.TempDir(), Retention: Retention{MaxCount: 5}}
	var sum Summary
	for i := 0; b.Loop(); i++ {
		c.Created = fixedClock().Add(time.Duration(i) * time.Second)
		var err error
		if sum, err = s.Write(context.Background(), c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(sum.Bytes), "archive-bytes")
	b.ReportMetric(float64(sum.ContentBytes), "content-bytes")
}

// BenchmarkVerify re-reads and checks that bundle.
func BenchmarkVerify(b *testing.B) {
	c := fixture(b)
	c.Kernel = kernelLines(500)
	sum, err := (&Store{Dir: b.TempDir()}).Write(context.Background(), c)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Verify(sum.Path); err != nil {
			b.Fatal(err)
		}
	}
}
