package labels

import (
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
)

// driverVersion is a kernel driver version split the way GFD splits it. The parts stay
// strings so that a revision such as "05" keeps its leading zero, as in GFD's labels.
type driverVersion struct {
	full, major, minor, revision string
}

// parseDriverVersion accepts "X.Y" or "X.Y.Z" where every part is decimal digits, e.g.
// "580.95.05". Anything else (empty, one part, four parts, letters, empty parts, longer
// than a label value) is rejected so that no label is published from it.
func parseDriverVersion(s string) (driverVersion, bool) {
	s = strings.TrimSpace(s)
	if len(s) > MaxValueLen {
		return driverVersion{}, false
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return driverVersion{}, false
	}
	for _, p := range parts {
		if !allDigits(p) {
			return driverVersion{}, false
		}
	}
	v := driverVersion{full: s, major: parts[0], minor: parts[1]}
	if len(parts) == 3 {
		v.revision = parts[2]
	}
	return v, true
}

// parseCUDAVersion accepts "major.minor" in decimal, e.g. "13.0", and returns the
// numbers (GFD formats them with %d, so "12.04" reads as 12 and 4).
func parseCUDAVersion(s string) (major, minor int, ok bool) {
	majorText, minorText, found := strings.Cut(strings.TrimSpace(s), ".")
	if !found || !allDigits(majorText) || !allDigits(minorText) {
		return 0, 0, false
	}
	major, errMajor := strconv.Atoi(majorText)
	minor, errMinor := strconv.Atoi(minorText)
	if errMajor != nil || errMinor != nil {
		return 0, 0, false
	}
	return major, minor, true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// addVersionLabels adds the driver and CUDA labels, new and deprecated, for each version
// the snapshot holds and that parses. A two-part driver version has no revision labels.
func addVersionLabels(out map[string]string, snap *gpu.Snapshot) {
	if _, failed := snap.Errors[gpu.FieldDriverVersion]; !failed {
		if v, ok := parseDriverVersion(snap.Driver.Version); ok {
			out[KeyDriverVersionFull] = v.full
			out[KeyDriverVersionMajor] = v.major
			out[KeyDriverVersionMinor] = v.minor
			out[KeyDriverMajor] = v.major
			out[KeyDriverMinor] = v.minor
			if v.revision != "" {
				out[KeyDriverVersionRevision] = v.revision
				out[KeyDriverRev] = v.revision
			}
		}
	}
	if _, failed := snap.Errors[gpu.FieldCUDAVersion]; !failed {
		if major, minor, ok := parseCUDAVersion(snap.Driver.CUDAVersion); ok {
			out[KeyRuntimeVersionMajor] = strconv.Itoa(major)
			out[KeyRuntimeVersionMinor] = strconv.Itoa(minor)
			out[KeyRuntimeVersionFull] = strconv.Itoa(major) + "." + strconv.Itoa(minor)
			out[KeyRuntimeMajor] = strconv.Itoa(major)
			out[KeyRuntimeMinor] = strconv.Itoa(minor)
		}
	}
}
