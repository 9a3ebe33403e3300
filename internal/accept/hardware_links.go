package accept

import (
	"fmt"
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

func checkPCIeLink(f *Facts, p *Policy) Verdict {
	return perGPU(f, []gpu.Field{gpu.FieldPCIeLink}, func(d *gpu.Device) gpuVerdict {
		l := d.PCI
		wantGen, wantWidth := l.LinkGenMax, l.LinkWidthMax
		if p.Expect.PCIeGen > 0 {
			wantGen = p.Expect.PCIeGen
		}
		if p.Expect.PCIeWidth > 0 {
			wantWidth = p.Expect.PCIeWidth
		}
		cur := fmt.Sprintf("gen%d x%d", l.LinkGen, l.LinkWidth)
		switch {
		case l.LinkWidth < wantWidth:
			return gpuVerdict{StatusFail, fmt.Sprintf("%s, width below x%d", cur, wantWidth)}
		case l.LinkGen < wantGen:
			// NVML reports the current generation; an idle GPU may train down to save power,
			// so a lower generation is a warning unless the width dropped too.
			return gpuVerdict{StatusWarn, fmt.Sprintf("%s, generation below gen%d (an idle GPU may downtrain: recheck under load)", cur, wantGen)}
		}
		if l.LinkGenMaxDevice > 0 && l.LinkGenMaxDevice > l.LinkGenMax {
			return gpuVerdict{StatusWarn, fmt.Sprintf("%s; the slot limits the GPU (gen%d capable) to gen%d", cur, l.LinkGenMaxDevice, l.LinkGenMax)}
		}
		return gpuVerdict{StatusPass, fmt.Sprintf("%s (max gen%d x%d)", cur, l.LinkGenMax, l.LinkWidthMax)}
	})
}

func checkNVLink(f *Facts, p *Policy) Verdict {
	return perGPU(f, nil, func(d *gpu.Device) gpuVerdict {
		if e := d.Err(gpu.FieldNVLink); e != nil {
			switch {
			case !e.NotSupported:
				return gpuVerdict{StatusFail, "cannot read NVLink state: " + e.Message}
			case p.Expect.NVLinksPerGPU > 0:
				return gpuVerdict{StatusFail, fmt.Sprintf("no NVLink (%s), %d links expected", e.Message, p.Expect.NVLinksPerGPU)}
			}
			return gpuVerdict{StatusSkip, "GPU has no NVLink (" + e.Message + ")"}
		}
		if len(d.NVLinks) == 0 {
			if p.Expect.NVLinksPerGPU > 0 {
				return gpuVerdict{StatusFail, fmt.Sprintf("no NVLinks reported, %d expected", p.Expect.NVLinksPerGPU)}
			}
			return gpuVerdict{StatusSkip, "GPU reports no NVLinks"}
		}
		active := 0
		var down []string
		for _, l := range d.NVLinks {
			if l.Active {
				active++
			} else {
				down = append(down, fmt.Sprint(l.Link))
			}
		}
		want := len(d.NVLinks)
		if p.Expect.NVLinksPerGPU > 0 {
			want = p.Expect.NVLinksPerGPU
		}
		if active < want {
			return gpuVerdict{StatusFail, fmt.Sprintf("%d/%d links active, %d expected (down: %s)", active, len(d.NVLinks), want, strings.Join(down, ","))}
		}
		return gpuVerdict{StatusPass, fmt.Sprintf("%d/%d links active", active, len(d.NVLinks))}
	})
}

func checkFabric(f *Facts, p *Policy) Verdict {
	if p.Expect.Fabric == "ignore" {
		return skip("the policy ignores the fabric (expect.fabric: ignore)")
	}
	return perGPU(f, nil, func(d *gpu.Device) gpuVerdict {
		e := d.Err(gpu.FieldFabric)
		noFabric := d.Fabric.State == "" || d.Fabric.State == "not-supported" || (e != nil && e.NotSupported)
		if noFabric {
			if p.Expect.Fabric == "required" {
				return gpuVerdict{StatusFail, "GPU has no NVSwitch fabric, the policy requires one"}
			}
			return gpuVerdict{StatusSkip, "GPU has no NVSwitch fabric (not supported)"}
		}
		if e != nil {
			return gpuVerdict{StatusFail, "cannot read fabric state: " + e.Message}
		}
		if d.Fabric.State != "completed" {
			return gpuVerdict{StatusFail, fmt.Sprintf("fabric registration %s", d.Fabric.State)}
		}
		if d.Fabric.Status != "" && d.Fabric.Status != "success" {
			return gpuVerdict{StatusFail, fmt.Sprintf("fabric registration completed with error: %s", d.Fabric.Status)}
		}
		return gpuVerdict{StatusPass, fmt.Sprintf("fabric completed (clique %d)", d.Fabric.CliqueID)}
	})
}
