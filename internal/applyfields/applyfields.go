// Package applyfields builds the content of a server-side apply from typed API values:
// each writer of a GPUNode or a policy applies an object built afresh from exactly the
// fields it owns (docs/architecture.md, field ownership), as unstructured content.
package applyfields

import (
	"encoding/json"
	"fmt"
)

// Of is v's JSON form as a map: the fields v sets, and no others (encoding/json honours
// omitempty and omitzero, so an unset field stays out of the apply and keeps its owner).
func Of(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("apply fields of %T: %w", v, err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("apply fields of %T: %w", v, err)
	}
	return out, nil
}
