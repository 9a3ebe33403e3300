package kmsg

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseRecord(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    Record
		wantErr bool
	}{
		{"a kernel record with a dictionary keeps only the message", "4,1234,5678,-;NVRM: Xid (PCI:0000:18:00): 79, x\n SUBSYSTEM=pci\n",
			Record{Facility: 0, Level: 4, Seq: 1234, Since: 5678 * time.Microsecond, Message: "NVRM: Xid (PCI:0000:18:00): 79, x"}, false},
		{"a record written from user space has facility 1", "11,358,90964842,-;NVRM: Xid (PCI:0000:00:06): 13, test",
			Record{Facility: 1, Level: 3, Seq: 358, Since: 90964842 * time.Microsecond, Message: "NVRM: Xid (PCI:0000:00:06): 13, test"}, false},
		{"escaped bytes are restored", `6,1,2,-;a\x09b`, Record{Level: 6, Seq: 1, Since: 2 * time.Microsecond, Message: "a\tb"}, false},
		{"a record without a separator is an error", "6,1,2,-", Record{}, true},
		{"a record with a bad header is an error", "x,1,2,-;m", Record{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRecord([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err == nil && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestReadAllReadsARegularFileOfRecords(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kmsg")
	data := "6,1,100,-;Linux version 6.8.0\n4,2,200,-;NVRM: Xid (PCI:0000:18:00): 48, DBE\ngarbage\n"
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadAll(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Seq != 2 {
		t.Fatalf("got %+v", recs)
	}
}

func TestReadAllNamesTheMissingFile(t *testing.T) {
	_, err := ReadAll(context.Background(), "/nonexistent/kmsg")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/kmsg") {
		t.Fatalf("err = %v", err)
	}
}

func TestReadAllOnTheLiveRingBuffer(t *testing.T) {
	if _, err := os.Stat("/dev/kmsg"); err != nil {
		t.Skipf("no /dev/kmsg on this machine: %v", err)
	}
	recs, err := ReadAll(context.Background(), "/dev/kmsg")
	if err != nil {
		t.Skipf("/dev/kmsg not readable here (container without CAP_SYSLOG?): %v", err)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Seq <= recs[i-1].Seq {
			t.Fatalf("sequence not increasing at %d: %d after %d", i, recs[i].Seq, recs[i-1].Seq)
		}
	}
}

func FuzzParseRecord(f *testing.F) {
	f.Add([]byte("4,1234,5678,-;NVRM: Xid (PCI:0000:18:00): 79, x\n SUBSYSTEM=pci\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRecord(b)
		if err == nil && (r.Facility < 0 || r.Level < 0 || r.Level > 7) {
			t.Fatalf("bad record %+v", r)
		}
	})
}
