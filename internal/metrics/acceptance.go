package metrics

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpunode/gpunode/internal/record"
)

// acceptanceCollector serves the result and time of the newest acceptance record in a
// folder (<id>.json files: the agent's record.Store in <state-dir>/records, or
// record.Write's). The folder is listed again only when its modification time changes
// (each file is renamed into place). A folder that does not exist yet is the agent's
// before its first acceptance run: no record, and not a failed scrape.
type acceptanceCollector struct {
	fsys           fs.FS
	result, finish *prometheus.Desc

	mu      sync.Mutex
	dirTime time.Time
	cached  *lastRecord // nil: no record in the folder
	valid   bool
}

// lastRecord is what the metrics need of a record.
type lastRecord struct {
	Result     string    `json:"result"`
	FinishedAt time.Time `json:"finishedAt"`
}

func newAcceptanceCollector(fsys fs.FS) *acceptanceCollector {
	return &acceptanceCollector{
		fsys: fsys,
		result: prometheus.NewDesc("gpunode_acceptance_last_result",
			"Result of the newest acceptance record (1 for its result, 0 for the other).", []string{"result"}, nil),
		finish: prometheus.NewDesc("gpunode_acceptance_last_timestamp_seconds",
			"When the run of the newest acceptance record finished, in Unix seconds.", nil, nil),
	}
}

func (c *acceptanceCollector) name() string { return "acceptance" }

func (c *acceptanceCollector) describe(ch chan<- *prometheus.Desc) {
	ch <- c.result
	ch <- c.finish
}

func (c *acceptanceCollector) collect(_ context.Context, ch chan<- prometheus.Metric) error {
	r, err := c.newest()
	if err != nil || r == nil {
		return err
	}
	for _, res := range []string{record.ResultPassed, record.ResultFailed} {
		ch <- prometheus.MustNewConstMetric(c.result, gauge, boolValue(r.Result == res), res)
	}
	ch <- prometheus.MustNewConstMetric(c.finish, gauge, float64(r.FinishedAt.UnixNano())/1e9)
	return nil
}

// newest returns the newest record (nil when the folder has none), from the cache while
// the folder is unchanged.
func (c *acceptanceCollector) newest() (*lastRecord, error) {
	st, err := fs.Stat(c.fsys, ".")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no acceptance has run yet: the agent creates the folder with its first record
	}
	if err != nil {
		return nil, fmt.Errorf("acceptance records folder: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.valid && st.ModTime().Equal(c.dirTime) {
		return c.cached, nil
	}
	r, err := scanRecords(c.fsys)
	if err != nil {
		return nil, err
	}
	c.cached, c.dirTime, c.valid = r, st.ModTime(), true
	return r, nil
}

// scanRecords reads the newest file (by modification time, then name) that is an
// acceptance record; other JSON files are passed over.
func scanRecords(fsys fs.FS) (*lastRecord, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("acceptance records folder: %w", err)
	}
	type file struct {
		name string
		mod  time.Time
	}
	var files []file
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".json" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		files = append(files, file{e.Name(), info.ModTime()})
	}
	slices.SortFunc(files, func(a, b file) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return cmp.Compare(b.name, a.name)
	})
	for _, f := range files {
		if r, ok := readRecord(fsys, f.name); ok {
			return r, nil
		}
	}
	return nil, nil
}

// readRecord decodes the fields the metrics need, if name is an acceptance record.
func readRecord(fsys fs.FS, name string) (*lastRecord, bool) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, false
	}
	var r struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		lastRecord
	}
	if json.Unmarshal(data, &r) != nil || r.APIVersion != record.APIVersion || r.Kind != record.Kind {
		return nil, false
	}
	return &r.lastRecord, true
}
