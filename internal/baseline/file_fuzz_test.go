package baseline

import (
	"errors"
	"os"
	"slices"
	"testing"
)

// FuzzParse: a baseline file is YAML a person writes on top of the built-in table. Whatever
// it holds, Parse does not panic, gives a table or a *FileError naming the file, and never
// changes the base table.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../../examples/baselines/h200-measured.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("apiVersion: x\nkind: y\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		base := BuiltIn()
		before := base.Models()
		table, err := Parse("baseline.yaml", data, base)
		if !slices.Equal(base.Models(), before) {
			t.Fatalf("Parse changed the base table: %v, then %v", before, base.Models())
		}
		if err == nil {
			if table == nil {
				t.Fatal("no table and no error")
			}
			return
		}
		var fe *FileError
		if table != nil || !errors.As(err, &fe) || fe.File != "baseline.yaml" {
			t.Fatalf("Parse = %v, %v (%T); want only a *FileError naming the file", table, err, err)
		}
	})
}
