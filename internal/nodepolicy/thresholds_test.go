package nodepolicy

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/rules"
)

// jsonName is a struct field's JSON name.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// A threshold added to the API and to rules.Thresholds but not mapped by thresholds() would
// be accepted by the API server and then ignored: every field of the policy's table must
// reach the rules' table under the same name.
func TestEveryThresholdOfThePolicyReachesTheRules(t *testing.T) {
	def := reflect.ValueOf(rules.DefaultThresholds())
	byName := map[string]int{}
	for i := range def.NumField() {
		byName[jsonName(def.Type().Field(i))] = i
	}
	api := reflect.TypeOf(v1alpha1.Thresholds{})
	for i := range api.NumField() {
		f := api.Field(i)
		name := jsonName(f)
		t.Run(name+" is carried into the rules' thresholds", func(t *testing.T) {
			j, ok := byName[name]
			if !ok {
				t.Fatalf("rules.Thresholds has no field %q", name)
			}
			var in v1alpha1.Thresholds
			v := reflect.ValueOf(&in).Elem().Field(i)
			var want reflect.Value
			switch {
			case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() >= reflect.Int && f.Type.Elem().Kind() <= reflect.Int64:
				// A value no default has: one above the default (7 when the default is 0).
				n := def.Field(j).Convert(reflect.TypeFor[int64]()).Int() + 1
				p := reflect.New(f.Type.Elem())
				p.Elem().SetInt(n)
				v.Set(p)
				want = reflect.ValueOf(n).Convert(def.Field(j).Type())
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Int32:
				v.Set(reflect.ValueOf([]int32{4242}))
				want = reflect.ValueOf([]int{4242})
			default:
				t.Fatalf("field %s of type %s: teach this test its kind", name, f.Type)
			}
			gp := policy("fleet", 0, nil)
			gp.Spec.Acceptance.Thresholds = in
			got := reflect.ValueOf(Thresholds(&gp)).Field(j)
			if !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Errorf("spec.acceptance.thresholds.%s = %v gives the rules %v: map it in thresholds() (internal/nodepolicy/accept.go)", name, want, got)
			}
		})
	}
}
