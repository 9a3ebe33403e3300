package rules

import "slices"

// Rules is the rule set, in acceptance order (a copy). A GPU that does not answer is judged
// by Responding alone.
func Rules() []Rule { return slices.Clone(ruleSet) }

// String names the level in test messages.
func (l Level) String() string {
	switch l {
	case OK:
		return "ok"
	case Note:
		return "note"
	case Warn:
		return "warn"
	case Fail:
		return "fail"
	}
	return "unknown"
}
