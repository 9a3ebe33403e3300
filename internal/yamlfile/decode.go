package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrEmpty is wrapped by the *Error for a file that holds no YAML document at all (no
// bytes, blank lines, comments). A document holding only null ("~", a lone "---") is a
// document: whether it counts as empty is the loader's rule (see IsNull).
var ErrEmpty = errors.New("no YAML document")

// ErrParserFailed is wrapped by the *Error for input on which the YAML library panicked:
// it is third-party code, and a hostile file must not bring the process down.
var ErrParserFailed = errors.New("YAML parser failed")

// Parse reads the first YAML document of data into its node tree (a document node), for
// a loader that checks the nodes itself. Later documents are not read: see Rest. Errors
// are *Error: a syntax error at its line, ErrEmpty when data holds no document.
func Parse(name string, data []byte) (doc *yaml.Node, err error) {
	defer recoverInto(name, &err)
	if len(data) > MaxSize {
		return nil, tooLarge(name)
	}
	var n yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&n); err != nil {
		return nil, decodeError(name, err)
	}
	if err := checkLimits(name, data, &n); err != nil {
		return nil, err
	}
	return &n, nil
}

// Decode decodes the first YAML document of data into out strictly (a key that out does
// not name is an error, as is a key given twice or a value of the wrong type) and returns
// the document's node tree, for the lines of the loader's own checks. Fields of out that
// the document does not set keep their values, so out may hold defaults. Later documents
// are not read: see Rest. Errors are *Error, at the line of the first problem.
func Decode(name string, data []byte, out any) (doc *yaml.Node, err error) {
	defer recoverInto(name, &err)
	// The node tree first: it is linear to build, and checked against the limits before the
	// strict decode (quadratic in a mapping's keys) runs. A syntax error is reported by it
	// as by the strict decode; a type or key error only by the latter.
	doc, err = Parse(name, data)
	if err != nil && (errors.Is(err, ErrTooLarge) || errors.Is(err, ErrEmpty)) {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		return nil, decodeError(name, err)
	}
	if err != nil {
		return nil, err
	}
	return doc, nil
}

// Rest reads the documents after the first: the node trees of those that parse, up to the
// first that does not, and that one's error (an *Error). A file of one document gives
// none. The loader decides what a second document means.
func Rest(name string, data []byte) (docs []*yaml.Node, err error) {
	defer recoverInto(name, &err)
	if len(data) > MaxSize {
		return nil, tooLarge(name)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, decodeError(name, err)
		}
		if err := checkLimits(name, data, &n); err != nil {
			return docs, err
		}
		if i > 0 {
			docs = append(docs, &n)
		}
	}
}

// IsNull reports whether a document node holds nothing: no content, or a null scalar.
func IsNull(doc *yaml.Node) bool {
	return doc == nil || len(doc.Content) == 0 || doc.Content[0].ShortTag() == "!!null"
}

// LocateLine finds the line of a problem the YAML library reported without one (it omits
// the line of some errors on the first line, of unknown anchors and of invalid UTF-8): the
// first line at which data, cut after that line, fails to decode strictly into a fresh
// value of out's type with an error containing problem; 0 when none does. It bisects, so
// a large file costs a few decodes, not one per line.
func LocateLine(data []byte, problem string, out any) int {
	t := reflect.TypeOf(out).Elem()
	var ends []int // ends[i]: the length of data cut after line i+1
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	failsAt := func(i int) bool {
		_, err := Decode("", data[:ends[i]], reflect.New(t).Interface())
		var e *Error
		return errors.As(err, &e) && e.Err != nil && !errors.Is(e.Err, ErrEmpty) && strings.Contains(e.Err.Error(), problem)
	}
	i := sort.Search(len(ends), failsAt)
	if i == len(ends) {
		return 0
	}
	return i + 1
}

func decodeError(name string, err error) *Error {
	if errors.Is(err, io.EOF) {
		return &Error{File: name, Msg: "file is empty", Err: ErrEmpty}
	}
	return fromLibrary(name, err)
}

// recoverInto turns a panic of the YAML library into an *Error wrapping ErrParserFailed.
func recoverInto(name string, err *error) {
	if r := recover(); r != nil {
		cause := fmt.Errorf("%w: %v", ErrParserFailed, r)
		*err = &Error{File: name, Msg: cause.Error(), Err: cause}
	}
}
