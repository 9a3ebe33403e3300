package labels

import (
	"errors"
	"testing"
)

// FuzzParseMapping: the label mapping file is YAML a person writes. Whatever it holds,
// ParseMapping does not panic, and an error is a *MappingError naming the file.
func FuzzParseMapping(f *testing.F) {
	f.Add([]byte("defaults: false\nrules:\n  - match: {productRegex: 'H100.*', deviceID: '0x2330'}\n    class: h100\n"))
	f.Add([]byte("rules:\n  - match: {productRegex: '('}\n    class: x\n"))
	f.Add([]byte("rules: []\n---\nrules: []\n"))
	f.Add([]byte("unknown: 1\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := ParseMapping("mapping.yaml", data)
		if err == nil {
			return
		}
		var me *MappingError
		if !errors.As(err, &me) || me.Path != "mapping.yaml" {
			t.Fatalf("ParseMapping error %v (%T), want a *MappingError naming the file", err, err)
		}
	})
}
