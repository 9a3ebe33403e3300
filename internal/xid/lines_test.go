package xid

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

const xid79 = "[  12.5] NVRM: Xid (PCI:0000:9b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."

func TestReadLines(t *testing.T) {
	huge := strings.Repeat("x", 2<<20)
	cases := []struct {
		name      string
		text      string
		want      []string
		wantLong  int
		wantLines int
	}{
		{"lines are read without their endings", "a\nb\r\nc", []string{"a", "b", "c"}, 0, 3},
		{"a line past the cap is skipped and the lines after it read", "a\n" + huge + "\nb\n", []string{"a", "b"}, 1, 2},
		{"a last line past the cap without a newline is counted", "a\n" + huge, []string{"a"}, 1, 1},
		{"a line exactly at the cap is read", strings.Repeat("y", MaxLineBytes-1) + "\n", []string{strings.Repeat("y", MaxLineBytes-1)}, 0, 1},
		{"nothing is nothing", "", nil, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			st, err := ReadLines(context.Background(), strings.NewReader(tc.text), "t", func(l string) { got = append(got, l) })
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || st.Long != tc.wantLong || st.Lines != tc.wantLines {
				t.Errorf("lines %.40q, stats %+v; want %.40q, %d long, %d lines", got, st, tc.want, tc.wantLong, tc.wantLines)
			}
		})
	}
}

// A saved log with a line of another program past 1 MiB once stopped the scan with an
// error, and acceptance skipped the XID check: the XID 79 after it must be found.
func TestAnXIDAfterAHugeLineIsFound(t *testing.T) {
	text := "[   1.0] systemd[1]: started\n" + strings.Repeat("{\"blob\":1}", 200_000) + "\n" + xid79 + "\n"
	scan, err := ScanAll(context.Background(), strings.NewReader(text), "kern.log")
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.Events) != 1 || scan.Events[0].XID != 79 || scan.Long != 1 {
		t.Errorf("events %+v, %d long lines: want the XID 79 and one long line", scan.Events, scan.Long)
	}
}

// A flood of one fault is counted past MaxEvents, and a different fault after it is kept.
func TestAFloodOfOneFaultIsCountedAndTheNextFaultKept(t *testing.T) {
	var b strings.Builder
	n := MaxEvents + 5000
	for i := range n {
		fmt.Fprintf(&b, "[%6d.0] NVRM: Xid (PCI:0000:9b:00): 13, pid=%d, name=python3, Graphics Exception\n", i, i)
	}
	b.WriteString(xid79 + "\n")
	fmt.Fprintf(&b, "[ 99999.0] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=python3, Graphics Exception\n")
	scan, err := ScanAll(context.Background(), strings.NewReader(b.String()), "flood.log")
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.Events) != MaxEvents+2 || scan.Repeats != n-MaxEvents {
		t.Fatalf("%d events kept, %d repeats: want %d and %d", len(scan.Events), scan.Repeats, MaxEvents+2, n-MaxEvents)
	}
	last := scan.Events[len(scan.Events)-2:]
	if last[0].XID != 79 || last[1].XID != 13 || last[1].PCI != "0000:3b:00" {
		t.Errorf("the faults after the flood: %+v", last)
	}
}

// BenchmarkScanAFlood reads a million XID 13 lines (docs/benchmarks.md): memory stays at
// MaxEvents events whatever the log's length.
func BenchmarkScanAFlood(b *testing.B) {
	var sb strings.Builder
	for i := range 1_000_000 {
		fmt.Fprintf(&sb, "[%7d.0] NVRM: Xid (PCI:0000:9b:00): 13, pid=%d, name=python3, Graphics Exception\n", i, i)
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ScanAll(context.Background(), strings.NewReader(text), "flood"); err != nil {
			b.Fatal(err)
		}
	}
}
