package containerd

import (
	"fmt"
	"strings"
)

// ParseVersion reads the version from `containerd --version` output, e.g.
// "containerd containerd.io 1.7.27 05044ec0a9a7..." or
// "containerd github.com/containerd/containerd/v2 v2.0.4 1a43cb6a...": "1.7.27", "2.0.4".
func ParseVersion(out string) (string, error) {
	fields := strings.Fields(out)
	if len(fields) >= 3 && fields[0] == "containerd" {
		v := strings.TrimPrefix(fields[2], "v")
		if v != "" && v[0] >= '0' && v[0] <= '9' {
			return v, nil
		}
	}
	line, _, _ := strings.Cut(out, "\n")
	if len(line) > 120 {
		line = line[:120]
	}
	return "", fmt.Errorf("parse containerd version from %q", line)
}
