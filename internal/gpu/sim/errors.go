package sim

import (
	"errors"
	"fmt"
)

// ErrInvalidScenario is wrapped by every error about a scenario that cannot be used: a file
// that does not parse or validate, or an unknown preset name. The CLI maps it to exit code 2.
var ErrInvalidScenario = errors.New("invalid scenario")

// ErrInvalidFault is wrapped by the error Inject returns for a fault that cannot be applied.
var ErrInvalidFault = errors.New("invalid fault")

// ScenarioError is a problem in a scenario file, with the line it is on.
type ScenarioError struct {
	// File is the name the scenario was parsed under (a path or a preset name).
	File string
	// Line is the 1-based line of the problem; 0 when the problem has no single line.
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error implements error: "scenario FILE: line N: MSG".
func (e *ScenarioError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("scenario %s: line %d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("scenario %s: %s", e.File, e.Msg)
}

// Is makes errors.Is(err, ErrInvalidScenario) true for every ScenarioError.
func (e *ScenarioError) Is(target error) bool { return target == ErrInvalidScenario }
