package evidence

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/fault"
	"github.com/gpunode/gpunode/internal/health"
)

// decodeArray decodes a section file; it fails the test if the file is not valid JSON.
func decodeArray[T any](t *testing.T, b Bundle, name string) []T {
	t.Helper()
	for _, f := range b.Files {
		if f.Name == name {
			var out []T
			if err := json.Unmarshal(f.Data, &out); err != nil {
				t.Fatalf("%s is not a JSON array: %v\n%s", name, err, f.Data)
			}
			return out
		}
	}
	t.Fatalf("no file %s in the bundle", name)
	return nil
}

func entry(t *testing.T, b Bundle, name string) FileEntry {
	t.Helper()
	e, ok := b.Manifest.File(name)
	if !ok {
		t.Fatalf("no manifest entry for %s", name)
	}
	return e
}

func TestBuildKeepsEverythingWithinDefaultLimits(t *testing.T) {
	c := fixture(t)
	b, err := Build(c, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Manifest.Truncated {
		t.Fatalf("a normal bundle was truncated: %+v", b.Manifest.Files)
	}
	names := []string{}
	for _, f := range b.Files {
		names = append(names, f.Name)
		e := entry(t, b, f.Name)
		if e.Bytes != int64(len(f.Data)) || e.Bytes > e.Cap {
			t.Errorf("%s: %d bytes, manifest %d, cap %d", f.Name, len(f.Data), e.Bytes, e.Cap)
		}
	}
	if got := strings.Join(names, ","); got != strings.Join(sectionOrder, ",") {
		t.Errorf("files %s, want %s", got, strings.Join(sectionOrder, ","))
	}
	if got := decodeArray[KernelRecord](t, b, FileKernel); len(got) != 20 || got[0].Seq != 1000 || got[19].Seq != 1019 {
		t.Errorf("kernel records %d, want the 20 of the window in log order", len(got))
	}
	fs := decodeArray[health.Finding](t, b, FileFindings)
	if len(fs) != 3 || fs[0].Cause != "xid-79" {
		t.Errorf("findings %v: want the trigger first, then the node's 2", fs)
	}
	if pods := decodeArray[PodOnGPU](t, b, FilePods); len(pods) != 2 || pods[0].Name != "vllm-7" {
		t.Errorf("pods %v: want both, sorted by namespace", pods)
	}
	if len(b.Manifest.GPUs) != 1 || b.Manifest.GPUs[0] != c.Trigger.GPU {
		t.Errorf("affected GPUs %v, want the trigger's %s", b.Manifest.GPUs, c.Trigger.GPU)
	}
	if got := strings.Join(b.Manifest.Failed, ","); got != "pods" {
		t.Errorf("failed sources %q, want pods", got)
	}
}

func TestBuildCapsEachSection(t *testing.T) {
	big := fixture(t)
	big.Kernel = kernelLines(2000)
	for i := range 300 {
		f := xid79(big.Trigger.GPU)
		f.Cause, f.Severity, f.LastSeen = "noise", fault.SeverityInfo, eventAt.Add(time.Duration(i)*time.Second)
		big.Findings = append(big.Findings, f)
	}
	big.Snapshots = append(big.Snapshots, big.Snapshots[0], big.Snapshots[0])
	snapBytes := int64(len(mustJSON(t, big.Snapshots[0])))

	tests := []struct {
		name    string
		limits  Limits
		file    string
		check   func(t *testing.T, b Bundle)
		dropped bool
	}{
		{"a kernel cap keeps the records nearest the event", Limits{Kernel: 8 << 10}, FileKernel, func(t *testing.T, b Bundle) {
			recs := decodeArray[KernelRecord](t, b, FileKernel)
			if len(recs) == 0 {
				t.Fatal("no record kept")
			}
			for _, r := range recs {
				if d := absDuration(r.Time.Sub(eventAt)); d > time.Duration(len(recs))*time.Second {
					t.Errorf("kept a record %s from the event while %d were kept", d, len(recs))
				}
			}
			for i := 1; i < len(recs); i++ {
				if recs[i].Seq <= recs[i-1].Seq {
					t.Fatalf("records out of log order at %d", i)
				}
			}
		}, true},
		{"a findings cap keeps the trigger and the most severe", Limits{Findings: 4 << 10}, FileFindings, func(t *testing.T, b Bundle) {
			fs := decodeArray[health.Finding](t, b, FileFindings)
			if len(fs) < 2 || fs[0].Cause != "xid-79" {
				t.Fatalf("findings %d, first %q: want the trigger first", len(fs), fs[0].Cause)
			}
			warned := false
			for _, f := range fs {
				warned = warned || f.Severity == fault.SeverityWarning
			}
			if !warned {
				t.Error("the warning was dropped before info findings")
			}
		}, true},
		{"a GPU cap keeps the first snapshots", Limits{GPU: snapBytes + 16}, FileGPU, func(t *testing.T, b Bundle) {
			if e := entry(t, b, FileGPU); e.Items != 1 || e.Dropped != 2 {
				t.Errorf("snapshots kept %d dropped %d, want 1 and 2", e.Items, e.Dropped)
			}
		}, true},
		{"a snapshot larger than the cap is dropped and recorded", Limits{GPU: 1024}, FileGPU, func(t *testing.T, b Bundle) {
			if e := entry(t, b, FileGPU); e.Items != 0 || e.Dropped != 3 || !strings.Contains(e.Note, "3 of 3 items dropped") {
				t.Errorf("entry %+v: want every snapshot dropped with a note", e)
			}
		}, true},
		{"node facts larger than their cap become null", Limits{Node: 64}, FileNode, func(t *testing.T, b Bundle) {
			if f := b.Files[0]; string(f.Data) != "null\n" {
				t.Errorf("node.json = %q, want null", f.Data)
			}
		}, true},
		{"a total cap shares the budget in order of importance", Limits{Total: 64 << 10}, FileGPU, func(t *testing.T, b Bundle) {
			if n := b.Manifest.Bytes(); n > 64<<10 {
				t.Errorf("files sum to %d bytes, over the 64 KiB total", n)
			}
			if e := entry(t, b, FileNode); e.Dropped != 0 {
				t.Error("the node facts were dropped under a total cap that fits them")
			}
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Build(big, tc.limits)
			if err != nil {
				t.Fatal(err)
			}
			e := entry(t, b, tc.file)
			if (e.Dropped > 0) != tc.dropped || b.Manifest.Truncated != tc.dropped {
				t.Fatalf("%s dropped %d, manifest truncated %v; want dropping %v", tc.file, e.Dropped, b.Manifest.Truncated, tc.dropped)
			}
			for _, f := range b.Files {
				fe := entry(t, b, f.Name)
				if int64(len(f.Data)) > fe.Cap {
					t.Errorf("%s is %d bytes, over its cap %d", f.Name, len(f.Data), fe.Cap)
				}
				if !json.Valid(f.Data) {
					t.Errorf("%s is not valid JSON after fitting", f.Name)
				}
			}
			tc.check(t, b)
		})
	}
}

func TestBuildRefusesBadInput(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Contents, *Limits)
		want string
	}{
		{"a bundle without a node name is refused", func(c *Contents, _ *Limits) { c.Node.Node = "" }, "no node name"},
		{"a bundle without a created time is refused and names the node", func(c *Contents, _ *Limits) { c.Created = time.Time{} },
			"node gpu-node-07: no created time"},
		{"a section cap below the minimum is refused and named", func(_ *Contents, l *Limits) { l.Kernel = 10 },
			"limit kernel.json = 10 bytes"},
		{"a total cap below the minimum is refused", func(_ *Contents, l *Limits) { l.Total = 100 }, "limit total = 100 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, l := fixture(t), Limits{}
			tc.edit(&c, &l)
			_, err := Build(c, l)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestAffectedGPUs(t *testing.T) {
	c := fixture(t)
	tests := []struct {
		name string
		edit func(*Contents)
		want int
	}{
		{"explicit GPUs win, without duplicates", func(c *Contents) { c.GPUs = []string{"GPU-b", "GPU-a", "GPU-b", ""} }, 2},
		{"a GPU trigger names its GPU", func(*Contents) {}, 1},
		{"a node-level trigger names every GPU of the snapshot", func(c *Contents) { c.Trigger.GPU = "" }, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cc := c
			tc.edit(&cc)
			if got := cc.AffectedGPUs(); len(got) != tc.want {
				t.Errorf("AffectedGPUs() = %v, want %d", got, tc.want)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(buf.Bytes())
}
