package remediation

import "time"

// Decide is the next move for one node, as DecideFleet decides it: the policy's defaults
// applied, the need assessed, then decide. The tests judge one node at a time through it.
func Decide(f Facts, p Policy, adm Admission, now time.Time) Decision {
	p = p.WithDefaults()
	return decide(f, p, Assess(f, p), adm, now)
}
