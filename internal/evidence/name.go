package evidence

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Bundle file names: "evidence-<node>-<created UTC, 20060102T150405Z>-<sha256>.tar.gz".
// Sorting them by created time sorts them oldest first; the hash makes each name unique
// to its content.
const (
	namePrefix = "evidence-"
	nameSuffix = ".tar.gz"
	timeLayout = "20060102T150405Z"
	// tempPrefix names an archive being written; it never matches a bundle name.
	tempPrefix = ".evidence-tmp-"
)

// BundleName is the file name of a bundle of node created at created with the given
// archive sha256.
func BundleName(node string, created time.Time, sha string) string {
	return namePrefix + node + "-" + created.UTC().Format(timeLayout) + "-" + sha + nameSuffix
}

// ParseName takes a bundle file name apart. It fails, naming the input, for any file that
// is not a bundle (retention never touches those).
func ParseName(name string) (node string, created time.Time, sha string, err error) {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if ok {
		rest, ok = strings.CutSuffix(rest, nameSuffix)
	}
	if !ok {
		return "", time.Time{}, "", fmt.Errorf("evidence bundle name %q: want %s<node>-<time>-<sha256>%s", name, namePrefix, nameSuffix)
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return "", time.Time{}, "", fmt.Errorf("evidence bundle name %q: no sha256", name)
	}
	rest, sha = rest[:i], rest[i+1:]
	if d, derr := hex.DecodeString(sha); derr != nil || len(d) != 32 || strings.ToLower(sha) != sha {
		return "", time.Time{}, "", fmt.Errorf("evidence bundle name %q: %q is not a lower-case sha256", name, sha)
	}
	j := strings.LastIndexByte(rest, '-')
	if j < 0 {
		return "", time.Time{}, "", fmt.Errorf("evidence bundle name %q: no created time", name)
	}
	node, stamp := rest[:j], rest[j+1:]
	created, err = time.Parse(timeLayout, stamp)
	if err != nil {
		return "", time.Time{}, "", fmt.Errorf("evidence bundle name %q: created time: %w", name, err)
	}
	if err := checkNodeName(node); err != nil {
		return "", time.Time{}, "", fmt.Errorf("evidence bundle name %q: %w", name, err)
	}
	return node, created, sha, nil
}

// maxNodeName keeps a bundle name within the 255 bytes a Linux file name may have
// (prefix, time, sha256 and suffix take 98). Kubernetes allows node names of 253 bytes;
// longer than 150 are refused here, with that reason.
const maxNodeName = 150

// checkNodeName accepts a Kubernetes node name (a DNS subdomain: lower-case letters,
// digits, '-' and '.') of at most maxNodeName bytes, which is safe in a file name.
func checkNodeName(node string) error {
	if node == "" || len(node) > maxNodeName {
		return fmt.Errorf("node name %q: want 1 to %d bytes (a bundle's file name must fit in 255)", node, maxNodeName)
	}
	for _, r := range node {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '.' {
			return fmt.Errorf("node name %q: %q is not allowed in a node name", node, r)
		}
	}
	if node[0] == '.' || node[0] == '-' {
		return fmt.Errorf("node name %q: must start with a letter or digit", node)
	}
	return nil
}
