// Package yamlfile reads gpunode's YAML files (policies, scenarios, baselines, mappings,
// device plugin configurations) one way: one document decoded strictly into a Go struct,
// its node tree kept for lines, and every problem reported as FILE:LINE.
//
// This package owns the plumbing the loaders share: running the YAML library safely (a
// panic becomes an error), splitting its errors into lines and messages, and finding the
// line of a key for the loader's own checks. A loader may keep its own error type and
// wording on top (Problems and Summary give it the pieces) or return *Error as it is.
//
// A path names a node below another: each step is a mapping key (a string) or a sequence
// index (an int), as in KeyLine(doc, "sharing", "timeSlicing", "resources", 0, "name").
package yamlfile

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a problem in a YAML file. Its text is "FILE:LINE: MSG", or "FILE: MSG" when no
// single line is at fault.
type Error struct {
	// File is the name the file was read under (a path, or a name for messages).
	File string
	// Line is the 1-based line of the problem; 0 when the problem has no single line.
	Line int
	// Field is the key the problem is about, when known (an unknown field names itself).
	Field string
	// Msg says what is wrong.
	Msg string
	// Err is the YAML library's error, ErrEmpty or ErrParserFailed; nil for a problem
	// found by the loader itself.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Problem is one message of the YAML library with its line (0 when the library gave none).
type Problem struct {
	Line int
	Msg  string
}

// lineRE is the library's "line N: " prefix; (?s) keeps a value that spans lines in Msg.
var lineRE = regexp.MustCompile(`(?s)^line (\d+): (.*)$`)

// Problems splits an error of the YAML library into its messages, in the library's order,
// each without the "yaml: " prefix and with its line split out. A decode error
// (*yaml.TypeError) gives one Problem per field at fault; any other error gives one.
//
// Given an *Error, Problems splits the library error it wraps; one made by a loader (no
// wrapped error), or a file past the limits (ErrTooLarge), is its own single Problem.
func Problems(err error) []Problem {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		if fe.Err == nil || errors.Is(fe.Err, ErrTooLarge) {
			return []Problem{{Line: fe.Line, Msg: fe.Msg}}
		}
		err = fe.Err
	}
	if errors.Is(err, ErrParserFailed) {
		return []Problem{{Msg: err.Error()}}
	}
	msgs := []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msgs = te.Errors
	}
	out := make([]Problem, 0, len(msgs))
	for _, msg := range msgs {
		p := Problem{Msg: msg}
		if m := lineRE.FindStringSubmatch(msg); m != nil {
			if line, convErr := strconv.Atoi(m[1]); convErr == nil {
				p = Problem{Line: line, Msg: m[2]}
			}
		}
		out = append(out, p)
	}
	return out
}

// UnknownField returns the key of the library's "field KEY not found in type T" message;
// ok is false for any other message.
func UnknownField(msg string) (key string, ok bool) {
	rest, found := strings.CutPrefix(msg, "field ")
	if !found {
		return "", false
	}
	if key, _, ok = strings.Cut(rest, " not found in type"); !ok {
		return "", false
	}
	return key, true
}

// Summary is the first problem of err as a loader shows it: the first line of its message,
// trimmed, and an unknown field worded `unknown field "KEY"`.
func Summary(err error) Problem {
	ps := Problems(err)
	if len(ps) == 0 {
		return Problem{}
	}
	p := Problem{Line: ps[0].Line, Msg: strings.TrimSpace(strings.SplitN(ps[0].Msg, "\n", 2)[0])}
	if key, ok := UnknownField(p.Msg); ok {
		p.Msg = fmt.Sprintf("unknown field %q", key)
	}
	return p
}

// fromLibrary turns an error of the YAML library into an *Error at its first problem,
// worded by Summary; an unknown field is named in Field.
func fromLibrary(name string, err error) *Error {
	p := Summary(err)
	e := &Error{File: name, Line: p.Line, Msg: p.Msg, Err: err}
	if key, ok := UnknownField(Problems(err)[0].Msg); ok {
		e.Field = key
	}
	return e
}
