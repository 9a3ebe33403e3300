package yamlfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"go.yaml.in/yaml/v3"
)

// MaxSize is the largest file the loaders read: gpunode's files are kilobytes (a fleet's
// policy with every class is under 100 KiB). A cap keeps a hostile or mistaken file (a log,
// /dev/zero) from taking the memory and the minutes of the process reading it.
const MaxSize = 1 << 20

// MaxKeys is the most keys one mapping may hold. The YAML library checks a mapping's keys
// for duplicates pair by pair, so decoding a mapping of n keys costs n²: 40,000 keys took
// 14 s. No mapping of gpunode's files comes near this cap; the node tree is checked against
// it (in linear time) before anything is decoded into Go values.
const MaxKeys = 512

// ErrTooLarge is wrapped by the *Error for a file past MaxSize or a mapping past MaxKeys.
var ErrTooLarge = errors.New("YAML file too large")

// ReadFile reads the file at path, refusing one larger than MaxSize without reading past
// the cap. Its error says what is wrong without the path, for the loader's own error type
// to name the file: "cannot read: permission denied" (wrapping the filesystem's error), or
// "more than 1048576 bytes (1024 KiB): not a gpunode file" (wrapping ErrTooLarge).
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", unwrapPath(err))
	}
	defer func() { _ = f.Close() }() // read-only: a close error loses nothing
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", unwrapPath(err))
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s: %w", tooLargeMsg, ErrTooLarge)
	}
	return data, nil
}

// unwrapPath drops the *fs.PathError's path: the loader names the file.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var tooLargeMsg = fmt.Sprintf("more than %d bytes (%d KiB): not a gpunode file", MaxSize, MaxSize>>10)

func tooLarge(name string) *Error {
	return &Error{File: name, Msg: tooLargeMsg, Err: ErrTooLarge}
}

// MaxTotalKeys is the most keys all the mappings of one document may hold together: with
// MaxKeys it bounds the decode to a fraction of a second however the keys are spread.
const MaxTotalKeys = 16384

// checkLimits refuses data past MaxSize, and a document whose node tree has a mapping past
// MaxKeys (at the mapping's line) or more than MaxTotalKeys keys in all.
func checkLimits(name string, data []byte, doc *yaml.Node) error {
	if len(data) > MaxSize {
		return tooLarge(name)
	}
	total := 0
	if n := bigMapping(doc, &total); n != nil {
		if len(n.Content)/2 > MaxKeys {
			return &Error{File: name, Line: n.Line, Msg: fmt.Sprintf("a mapping of %d keys: at most %d are read", len(n.Content)/2, MaxKeys), Err: ErrTooLarge}
		}
		return &Error{File: name, Line: n.Line, Msg: fmt.Sprintf("more than %d keys in the document: not a gpunode file", MaxTotalKeys), Err: ErrTooLarge}
	}
	return nil
}

// bigMapping returns the first mapping under n with more than MaxKeys keys, or the one at
// which the keys counted in *total pass MaxTotalKeys; nil when neither. Each node is
// visited once: an alias is not followed (the library bounds alias expansion).
func bigMapping(n *yaml.Node, total *int) *yaml.Node {
	if n == nil || n.Kind == yaml.AliasNode {
		return nil
	}
	if n.Kind == yaml.MappingNode {
		*total += len(n.Content) / 2
		if len(n.Content)/2 > MaxKeys || *total > MaxTotalKeys {
			return n
		}
	}
	for _, c := range n.Content {
		if b := bigMapping(c, total); b != nil {
			return b
		}
	}
	return nil
}
