package evidence

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

func TestKmsgDevicePlacesRecordsOnTheWallClock(t *testing.T) {
	// The node booted 1000 s before now; records at 990 s, 995 s and 999 s since boot.
	now := eventAt
	dir := t.TempDir()
	path := filepath.Join(dir, "kmsg")
	lines := []string{
		"4,100,990000000,-;NVRM: early line",
		"3,101,995000000,-;NVRM: Xid (PCI:0000:9b:00): 79, pid=0, GPU has fallen off the bus.",
		"12,102,996000000,-;forged by user space: Xid 79",
		"4,103,999000000,-;NVRM: late line",
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := fstest.MapFS{"proc/uptime": {Data: []byte("1000.00 7777.00\n")}}
	k := KmsgDevice{Path: path, Root: root, Clock: func() time.Time { return now }}
	w := Window{At: now.Add(-5 * time.Second), Before: 2 * time.Second, After: 2 * time.Second}
	got, err := k.Records(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Seq != 101 || !got[0].Time.Equal(now.Add(-5*time.Second)) || got[0].Level != 3 {
		t.Fatalf("records %+v: want only seq 101 at now-5s (the user-space record dropped)", got)
	}
	k.TrustUserRecords = true
	if got, _ := k.Records(context.Background(), w); len(got) != 2 {
		t.Errorf("trusting user records: %d records, want 2", len(got))
	}
}

func TestKmsgDeviceNamesWhatItCannotRead(t *testing.T) {
	tests := []struct {
		name string
		k    KmsgDevice
		want string
	}{
		{"no host root", KmsgDevice{Path: "/dev/kmsg"}, "no host root"},
		{"no /proc/uptime", KmsgDevice{Root: fstest.MapFS{}}, "/proc/uptime"},
		{"a garbled /proc/uptime", KmsgDevice{Root: fstest.MapFS{"proc/uptime": {Data: []byte("soon")}}}, `"soon": not a number`},
		{"a missing record device", KmsgDevice{Path: "/nonexistent/kmsg", Root: fstest.MapFS{"proc/uptime": {Data: []byte("5 5")}}}, "/nonexistent/kmsg"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s is named in the error", tc.name), func(t *testing.T) {
			_, err := tc.k.Records(context.Background(), Window{At: eventAt})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestKmsgDeviceReadsTheLiveKernelLog reads this machine's /dev/kmsg. It skips, saying why,
// where the device cannot be read (a container without CAP_SYSLOG).
func TestKmsgDeviceReadsTheLiveKernelLog(t *testing.T) {
	f, err := os.Open("/dev/kmsg")
	if err != nil {
		t.Skipf("live kernel log /dev/kmsg not readable here: %v", err)
	}
	_ = f.Close()
	k := KmsgDevice{Root: os.DirFS("/")}
	boot, err := k.bootTime()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	all, err := k.Records(context.Background(), Window{At: now, Before: now.Sub(boot) + time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no kernel record since boot")
	}
	for i, r := range all {
		if r.Time.Before(boot.Add(-time.Second)) || r.Time.After(time.Now().Add(time.Second)) {
			t.Fatalf("record %d at %s, outside boot %s .. now", i, r.Time, boot)
		}
		if i > 0 && r.Seq <= all[i-1].Seq {
			t.Fatalf("record %d: seq %d after %d", i, r.Seq, all[i-1].Seq)
		}
	}
	// The boot's first record (seq 0, logged 0 s after boot) lies in a window of the first
	// second after the computed boot time only if that boot time is right within a second.
	first, err := k.Records(context.Background(), Window{At: boot, Before: time.Second, After: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if all[0].Seq == 0 && (len(first) == 0 || first[0].Seq != 0) {
		t.Errorf("the boot's first record is not within a second of the computed boot time %s", boot)
	}
	t.Logf("%d kernel records since boot %s; %d in its first second", len(all), boot.Format(time.RFC3339), len(first))
}
