package yamlfile

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestErrorNamesTheFileAndTheLine(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"a problem at a line reads FILE:LINE: MSG", &Error{File: "p.yaml", Line: 3, Msg: "bad"}, "p.yaml:3: bad"},
		{"a problem of the whole file reads FILE: MSG", &Error{File: "p.yaml", Msg: "file is empty"}, "p.yaml: file is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAnErrorIsFoundThroughWrapping(t *testing.T) {
	_, err := Decode("p.yaml", []byte("a: 1\nb: 2\n"), &struct {
		A int `yaml:"a"`
	}{})
	wrapped := fmt.Errorf("load policy: %w", err)
	var e *Error
	if !errors.As(wrapped, &e) {
		t.Fatalf("errors.As(%v) found no *Error", wrapped)
	}
	if e.File != "p.yaml" || e.Line != 2 || e.Field != "b" || e.Msg != `unknown field "b"` {
		t.Errorf("got %+v, want p.yaml, line 2, field b, unknown field \"b\"", *e)
	}
}

func TestProblemsSplitsTheLibrarysMessages(t *testing.T) {
	type target struct {
		A int `yaml:"a"`
		B int `yaml:"b"`
	}
	tests := []struct {
		name string
		yaml string
		want []Problem
	}{
		{"a syntax error gives its line and message",
			"a: 1\nb: [\n", []Problem{{Line: 2, Msg: "did not find expected node content"}}},
		{"a syntax error on the first line comes without a line",
			"a: b: c\n", []Problem{{Msg: "mapping values are not allowed in this context"}}},
		{"each field at fault is a problem of its own",
			"a: x\nb: y\n", []Problem{{Line: 1, Msg: "cannot unmarshal !!str `x` into int"}, {Line: 2, Msg: "cannot unmarshal !!str `y` into int"}}},
		{"a value that spans lines keeps the line of its key",
			"a: \"x\\ny\"\n", []Problem{{Line: 1, Msg: "cannot unmarshal !!str `x\ny` into int"}}},
		{"an unknown field keeps the library's wording",
			"c: 1\n", []Problem{{Line: 1, Msg: "field c not found in type yamlfile.target"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("t.yaml", []byte(tt.yaml), &target{})
			if got := Problems(err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Problems = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestProblemsOfOtherErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []Problem
	}{
		{"no error has no problem", nil, nil},
		{"a loader's own error is its single problem", &Error{File: "f", Line: 4, Msg: "too many"}, []Problem{{Line: 4, Msg: "too many"}}},
		{"a plain error is one problem without the yaml prefix", errors.New("yaml: line 9: oops"), []Problem{{Line: 9, Msg: "oops"}}},
		{"a parser panic is one problem and never a line",
			&Error{File: "f", Err: fmt.Errorf("%w: line 3: boom", ErrParserFailed)}, []Problem{{Msg: "YAML parser failed: line 3: boom"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Problems(tt.err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Problems = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestUnknownField(t *testing.T) {
	tests := []struct {
		name, msg, key string
		ok             bool
	}{
		{"the library's unknown-field message names the key", "field gpuz not found in type accept.Expect", "gpuz", true},
		{"a type error is not an unknown field", "cannot unmarshal !!str `x` into int", "", false},
		{"a message that only starts alike is not one", "field gpuz is odd", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, ok := UnknownField(tt.msg)
			if key != tt.key || ok != tt.ok {
				t.Errorf("UnknownField(%q) = %q, %v; want %q, %v", tt.msg, key, ok, tt.key, tt.ok)
			}
		})
	}
}

func TestSummaryIsTheFirstProblemOnOneLine(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Problem
	}{
		{"no error has no summary", nil, Problem{}},
		{"an unknown field is worded for people",
			&yaml.TypeError{Errors: []string{"line 4: field gpuz not found in type accept.Expect", "line 5: field x not found in type accept.Expect"}}, Problem{Line: 4, Msg: `unknown field "gpuz"`}},
		{"a value that spans lines is cut at its first line",
			&Error{File: "f", Err: errors.New("yaml: line 2: cannot unmarshal !!str `a\nb` into int")}, Problem{Line: 2, Msg: "cannot unmarshal !!str `a"}},
		{"a syntax error without a line keeps none",
			errors.New("yaml: mapping values are not allowed in this context"), Problem{Msg: "mapping values are not allowed in this context"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summary(tt.err); got != tt.want {
				t.Errorf("Summary = %+v, want %+v", got, tt.want)
			}
		})
	}
}
