package evidence

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/health"
)

// TestBuildInvariants: for random contents and limits, every file is valid JSON within its
// cap, the files sum to at most the total cap, every input item is either kept or counted
// as dropped, and the trigger is never dropped while findings.json holds anything.
func TestBuildInvariants(t *testing.T) {
	base := fixture(t)
	for seed := range 300 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		c := base
		c.Kernel = kernelLines(r.IntN(3000))
		c.Findings = nil
		for range r.IntN(200) {
			f := xid79(base.Trigger.GPU)
			f.Cause, f.LastSeen = "xid-"+string(rune('a'+r.IntN(26))), eventAt.Add(time.Duration(r.IntN(1000))*time.Second)
			c.Findings = append(c.Findings, f)
		}
		c.Snapshots = nil
		for range r.IntN(4) {
			c.Snapshots = append(c.Snapshots, base.Snapshots[0])
		}
		l := Limits{Kernel: int64(64 + r.IntN(200_000)), GPU: int64(64 + r.IntN(80_000)), Findings: int64(64 + r.IntN(50_000)),
			Total: int64(minTotal + r.IntN(300_000))}
		b, err := Build(c, l)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		inputs := map[string]int{FileNode: 1, FileErrors: 1, FileHealth: 1, FilePods: len(c.Pods),
			FileKernel: len(c.Kernel), FileGPU: len(c.Snapshots), FileFindings: len(c.Findings) + 1}
		if n := b.Manifest.Bytes(); n > l.Total {
			t.Fatalf("seed %d: files sum to %d bytes, over the total %d", seed, n, l.Total)
		}
		for i, f := range b.Files {
			e := b.Manifest.Files[i]
			if int64(len(f.Data)) > e.Cap || !json.Valid(f.Data) {
				t.Fatalf("seed %d: %s is %d bytes (cap %d), valid JSON %v", seed, f.Name, len(f.Data), e.Cap, json.Valid(f.Data))
			}
			if e.Items+e.Dropped != inputs[f.Name] {
				t.Fatalf("seed %d: %s kept %d + dropped %d of %d items", seed, f.Name, e.Items, e.Dropped, inputs[f.Name])
			}
			if f.Name == FileFindings && e.Items > 0 {
				var fs []health.Finding
				if err := json.Unmarshal(f.Data, &fs); err != nil || fs[0].Cause != "xid-79" {
					t.Fatalf("seed %d: findings.json does not start with the trigger", seed)
				}
			}
		}
	}
}
