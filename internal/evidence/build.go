package evidence

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/gpunode/gpunode/internal/health"
)

// maxErrorText clips each collection error kept in errors.json.
const maxErrorText = 1024

// File is one file of a bundle.
type File struct {
	Name string
	Data []byte
}

// Bundle is a bundle built and ready to encode: the manifest (decoded and as written) and
// the files it describes, in archive order.
type Bundle struct {
	Manifest     Manifest
	ManifestJSON []byte
	Files        []File
}

// section is one file before it is fitted to its budget.
type section struct {
	name string
	// object: the file is one JSON value (dropped whole, as null, when it does not fit);
	// otherwise a JSON array of items, one per line.
	object bool
	items  [][]byte
	// order lists item indexes, most important first: the fit keeps a prefix of it.
	order []int
	// dropNote says which items go first, for the manifest.
	dropNote string
}

// Build applies the limits to c and returns the bundle's files and manifest. It is pure:
// the same Contents and Limits give the same bytes. It fails only on invalid input (no
// node, no created time, a limit below its minimum, a value JSON cannot encode).
func Build(c Contents, l Limits) (Bundle, error) {
	if c.Node.Node == "" {
		return Bundle{}, fmt.Errorf("build evidence: no node name in the node facts")
	}
	if c.Created.IsZero() {
		return Bundle{}, fmt.Errorf("build evidence for node %s: no created time", c.Node.Node)
	}
	l, err := l.withDefaults()
	if err != nil {
		return Bundle{}, fmt.Errorf("build evidence for node %s: %w", c.Node.Node, err)
	}
	secs, err := sections(c)
	if err != nil {
		return Bundle{}, fmt.Errorf("build evidence for node %s: %w", c.Node.Node, err)
	}
	m := Manifest{
		Schema: Schema, Node: c.Node.Node, Created: c.Created.UTC(), Trigger: c.Trigger,
		GPUs: c.AffectedGPUs(), Window: c.Window, TotalCap: l.Total,
	}
	for k := range c.Errors {
		m.Failed = append(m.Failed, k)
	}
	slices.Sort(m.Failed)
	var files []File
	left := l.Total
	for i, s := range secs {
		// Keep enough for the sections still to come to write at least their empty form.
		reserve := int64(len(secs)-1-i) * minCap
		budget := min(l.capOf(s.name), left-reserve)
		data, kept := fit(s, budget)
		left -= int64(len(data))
		sum := sha256.Sum256(data)
		e := FileEntry{Name: s.name, Bytes: int64(len(data)), SHA256: hex.EncodeToString(sum[:]),
			Items: kept, Dropped: len(s.items) - kept, Cap: budget}
		if e.Dropped > 0 {
			e.Note = fmt.Sprintf("%d of %d items dropped to fit %d bytes: %s", e.Dropped, len(s.items), budget, s.dropNote)
			m.Truncated = true
		}
		m.Files = append(m.Files, e)
		files = append(files, File{Name: s.name, Data: data})
	}
	mj, err := encodeManifest(m)
	if err != nil {
		return Bundle{}, err
	}
	return Bundle{Manifest: m, ManifestJSON: mj, Files: files}, nil
}

// sections encodes every part of c, in sectionOrder.
func sections(c Contents) ([]section, error) {
	node, err := json.MarshalIndent(c.Node, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode node facts: %w", err)
	}
	errs := map[string]string{}
	for k, v := range c.Errors {
		errs[k] = clipText(v, maxErrorText)
	}
	errJSON, err := json.MarshalIndent(errs, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode collection errors: %w", err)
	}
	healthJSON, err := json.MarshalIndent(c.Health, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode health state: %w", err)
	}
	findings := append([]health.Finding{c.Trigger}, c.Findings...)
	fs, err := encodeItems(FileFindings, findings)
	if err != nil {
		return nil, err
	}
	ks, err := encodeItems(FileKernel, c.Kernel)
	if err != nil {
		return nil, err
	}
	gs, err := encodeItems(FileGPU, c.Snapshots)
	if err != nil {
		return nil, err
	}
	pods := slices.Clone(c.Pods)
	slices.SortFunc(pods, comparePods)
	ps, err := encodeItems(FilePods, pods)
	if err != nil {
		return nil, err
	}
	return []section{
		{name: FileNode, object: true, items: [][]byte{node}, order: []int{0}, dropNote: "the node facts exceed the cap"},
		{name: FileErrors, object: true, items: [][]byte{errJSON}, order: []int{0}, dropNote: "the error list exceeds the cap"},
		{name: FileFindings, items: fs, order: findingOrder(findings),
			dropNote: "the trigger is kept first, then findings by severity, then by last seen, newest first"},
		{name: FileKernel, items: ks, order: kernelOrder(c.Kernel, c.Window.At),
			dropNote: "records farthest in time from the event are dropped first"},
		{name: FileGPU, items: gs, order: identity(len(gs)), dropNote: "the last snapshots are dropped first"},
		{name: FilePods, items: ps, order: identity(len(ps)), dropNote: "pods sorted by GPU, namespace, name; the last dropped first"},
		{name: FileHealth, object: true, items: [][]byte{healthJSON}, order: []int{0}, dropNote: "the health state exceeds the cap"},
	}, nil
}

// fit renders s within budget bytes, keeping the longest prefix of s.order whose items fit
// (an item too large to fit is skipped, smaller ones after it are still kept), in the
// items' own order. It returns the file and how many items it holds.
func fit(s section, budget int64) ([]byte, int) {
	if s.object {
		if int64(len(s.items[0])+1) <= budget {
			return append(slices.Clone(s.items[0]), '\n'), 1
		}
		return []byte("null\n"), 0
	}
	keep := make([]bool, len(s.items))
	size := int64(len("[]\n"))
	n := 0
	for _, i := range s.order {
		// An array of n items is "[\n" + items joined by ",\n" + "\n]\n".
		add := int64(len(s.items[i])) + 2
		if n == 0 {
			add += 2
		}
		if size+add > budget {
			continue
		}
		keep[i] = true
		size += add
		n++
	}
	if n == 0 {
		return []byte("[]\n"), 0
	}
	out := make([]byte, 0, size)
	out = append(out, "[\n"...)
	first := true
	for i, it := range s.items {
		if !keep[i] {
			continue
		}
		if !first {
			out = append(out, ",\n"...)
		}
		first = false
		out = append(out, it...)
	}
	return append(out, "\n]\n"...), n
}

func encodeItems[T any](name string, items []T) ([][]byte, error) {
	out := make([][]byte, len(items))
	for i, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return nil, fmt.Errorf("encode %s item %d: %w", name, i, err)
		}
		out[i] = b
	}
	return out, nil
}

// findingOrder keeps the trigger (index 0) first, then the most severe, then the newest.
func findingOrder(fs []health.Finding) []int {
	order := identity(len(fs))
	slices.SortStableFunc(order[1:], func(a, b int) int {
		if c := cmp.Compare(fs[b].Severity.Rank(), fs[a].Severity.Rank()); c != 0 {
			return c
		}
		return fs[b].LastSeen.Compare(fs[a].LastSeen)
	})
	return order
}

// kernelOrder puts the records nearest in time to at first; ties keep log order.
func kernelOrder(rs []KernelRecord, at time.Time) []int {
	order := identity(len(rs))
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(absDuration(rs[a].Time.Sub(at)), absDuration(rs[b].Time.Sub(at)))
	})
	return order
}

func comparePods(a, b PodOnGPU) int {
	return cmp.Or(cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.Name, b.Name), cmp.Compare(a.Container, b.Container))
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "...(clipped)"
}

func sortedSet(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s != "" {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
