package agent

import "github.com/gpunode/gpunode/internal/record"

// RecordStore keeps acceptance records on the node (*record.Store).
type RecordStore interface {
	// Put stores the record and returns its path; a path with an error means it was stored
	// but older records could not be removed.
	Put(r *record.Record) (string, error)
}

// keepRecord stores a run's record on the node (Config.Records) for the exporter. A
// failure is logged and does not fail the run: the record is still published.
func (a *Agent) keepRecord(r *record.Record) {
	if a.cfg.Records == nil {
		return
	}
	path, err := a.cfg.Records.Put(r)
	switch {
	case path == "":
		a.cfg.Log.Warn("acceptance record not kept on the node; the exporter keeps the previous result",
			"node", a.cfg.NodeName, "record", r.ID, "err", err)
	case err != nil:
		a.cfg.Log.Warn("acceptance record kept on the node, older ones not removed", "node", a.cfg.NodeName, "path", path, "err", err)
	default:
		a.cfg.Log.Info("acceptance record kept on the node", "node", a.cfg.NodeName, "path", path)
	}
}
