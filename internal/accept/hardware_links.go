package accept

import (
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
)

func checkDriverVersion(f *Facts, p *Policy) Verdict {
	return versionVerdict(f, "driver", func(s *gpu.Snapshot) string { return s.Driver.Version }, p.Versions.Driver)
}

func checkCUDAVersion(f *Facts, p *Policy) Verdict {
	return versionVerdict(f, "CUDA", func(s *gpu.Snapshot) string { return s.Driver.CUDAVersion }, p.Versions.CUDA)
}

func versionVerdict(f *Facts, what string, get func(*gpu.Snapshot) string, allowed []string) Verdict {
	if f.GPUErr != nil || f.GPU == nil {
		return skip("no GPU driver facts: %v", f.GPUErr)
	}
	v := get(f.GPU)
	if v == "" {
		return fail("%s version unknown", what)
	}
	if len(allowed) == 0 {
		return pass("%s %s (the policy pins no %s versions)", what, v, what)
	}
	if !MatchAny(allowed, v) {
		return fail("%s %s is not in the version matrix (%s)", what, v, strings.Join(allowed, " | "))
	}
	return pass("%s %s matches %s", what, v, strings.Join(allowed, " | "))
}
