package cdispec

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
)

// migMinorsFile lists the minors of the driver's capability device nodes.
const migMinorsFile = "proc/driver/nvidia-caps/mig-minors"

// readMIGMinors parses mig-minors: "<capability path> <minor>" per line, e.g.
// "gpu0/gi1/ci0/access 13". Lines that are not two fields with a numeric minor are an error
// naming their line.
func readMIGMinors(root fs.FS) (map[string]int, error) {
	data, err := fs.ReadFile(root, migMinorsFile)
	if err != nil {
		return nil, fmt.Errorf("MIG capability minors: %w", err)
	}
	return parseMIGMinors(data)
}

func parseMIGMinors(data []byte) (map[string]int, error) {
	out := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("/%s:%d: %q is not <capability> <minor>", migMinorsFile, n, line)
		}
		minor, err := strconv.Atoi(f[1])
		if err != nil || minor < 0 {
			return nil, fmt.Errorf("/%s:%d: minor %q is not a number", migMinorsFile, n, f[1])
		}
		out[f[0]] = minor
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("/%s: %w", migMinorsFile, err)
	}
	return out, nil
}

// migNodes are a MIG device's GPU instance and compute instance access nodes, which must
// exist under root.
func migNodes(root fs.FS, minors map[string]int, gpuMinor int, m gpu.MIGDevice) ([]string, error) {
	gi := fmt.Sprintf("gpu%d/gi%d/access", gpuMinor, m.GPUInstance)
	ci := fmt.Sprintf("gpu%d/gi%d/ci%d/access", gpuMinor, m.GPUInstance, m.ComputeInstance)
	var out []string
	for _, capability := range []string{gi, ci} {
		minor, ok := minors[capability]
		if !ok {
			return nil, fmt.Errorf("no %s in /%s", capability, migMinorsFile)
		}
		node := fmt.Sprintf("dev/nvidia-caps/nvidia-cap%d", minor)
		if _, err := fs.Stat(root, node); err != nil {
			return nil, fmt.Errorf("capability node /%s: %w", node, err)
		}
		out = append(out, "/"+node)
	}
	return out, nil
}
