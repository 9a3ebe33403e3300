package kmsg

// Stats returns a snapshot of the counters; it is safe to call while Run runs.
func (f *Follower) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}
