package nodepolicy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpunode/gpunode/internal/yamlfile"
)

// unknownKey finds the first mapping key that type t has no JSON field for, below n: its
// line and the problem; "" when every key is known. Types that decode themselves (times,
// durations, quantities) and maps take any key.
func unknownKey(n *yaml.Node, t reflect.Type, at string) (int, string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return 0, ""
	}
	switch t.Kind() {
	case reflect.Slice:
		if n.Kind == yaml.SequenceNode {
			for i, item := range n.Content {
				if line, msg := unknownKey(item, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); msg != "" {
					return line, msg
				}
			}
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for _, v := range yamlfile.Pairs(n) {
				if line, msg := unknownKey(v, t.Elem(), at); msg != "" {
					return line, msg
				}
			}
		}
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return 0, ""
		}
		fields := jsonFields(t)
		for k, v := range yamlfile.Pairs(n) {
			ft, ok := fields[k.Value]
			if !ok {
				where := strings.TrimPrefix(at, ".")
				if where == "" {
					return k.Line, fmt.Sprintf("unknown field %q", k.Value)
				}
				return k.Line, fmt.Sprintf("unknown field %q in %s", k.Value, where)
			}
			if line, msg := unknownKey(v, ft, at+"."+k.Value); msg != "" {
				return line, msg
			}
		}
	}
	return 0, ""
}

// jsonFields maps a struct's JSON field names to their types, inline structs flattened.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case f.Anonymous && (name == "" || slices.Contains(strings.Split(opts, ","), "inline")):
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
		case name == "":
			out[f.Name] = f.Type
		default:
			out[name] = f.Type
		}
	}
	return out
}
