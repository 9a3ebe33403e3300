package doctor

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gpunode/gpunode/internal/host"
)

// loadFailure is a kernel-log pattern that explains why the driver did not load.
type loadFailure struct {
	re    *regexp.Regexp
	cause string
	fix   string
}

// loadFailures are checked in order; the first match is the most likely cause.
var loadFailures = []loadFailure{
	{regexp.MustCompile(`(?i)(module verification failed|Key was rejected by service|Required key not available|Loading of unsigned module is rejected|Lockdown: .*unsigned module)`),
		"Secure Boot rejected the unsigned NVIDIA kernel module",
		"sign the NVIDIA modules with a key enrolled in MOK (DKMS signing) or use signed precompiled modules; or disable Secure Boot per the node image's policy"},
	{regexp.MustCompile(`(?i)nvidia\w*: (Unknown symbol|disagrees about version of symbol)`),
		"the NVIDIA module was built for a different kernel",
		"rebuild the module for the running kernel (install kernel headers for `uname -r`, then DKMS or the driver container), or boot the kernel the driver was built for"},
	{regexp.MustCompile(`NVRM: API mismatch`),
		"the user-space driver libraries and the kernel module are different versions",
		"reboot (or unload and reload the nvidia modules) so the kernel module matches the installed libraries; never mix driver versions between the host and the driver container"},
	{regexp.MustCompile(`NVRM: (The NVIDIA probe routine failed|No NVIDIA (GPU|devices?) found)`),
		"the driver found no GPU it could claim (another driver such as vfio-pci or nouveau holds it, or the GPU is not on the bus)",
		"check `lspci -k` for the GPU's driver; blacklist nouveau; unbind vfio-pci; if the GPU is missing from lspci, it has a hardware or BIOS fault"},
	{regexp.MustCompile(`NVRM: (GPU [0-9a-fA-F:.]+: )?RmInitAdapter failed`),
		"the driver could not initialise a GPU (firmware, power or hardware fault)",
		"read the RmInitAdapter lines in dmesg; reset the GPU or reboot; a GPU that keeps failing needs service"},
	{regexp.MustCompile(`(?i)fallen off the bus`),
		"a GPU fell off the bus",
		"capture dmesg, then reboot the node; a GPU that falls off again needs service"},
}

// diagnoseLoad returns the most likely cause of a driver problem from the kernel log.
func diagnoseLoad(log []string) (cause, fix, line string) {
	for _, lf := range loadFailures {
		for _, l := range log {
			if lf.re.MatchString(l) {
				return lf.cause, lf.fix, l
			}
		}
	}
	return "", "", ""
}

func driverProbes(f Facts) []Probe {
	var ps []Probe
	cause, fix, line := diagnoseLoad(f.KernelLog)
	secureBoot := f.Host != nil && f.Host.SecureBoot.State == host.SecureBootEnabled

	mod := Probe{Name: "kernel module", Command: "lsmod | grep nvidia"}
	switch {
	case f.ModulesErr != nil:
		mod.Status, mod.Detail = Warn, fmt.Sprintf("cannot read /proc/modules: %v", f.ModulesErr)
	case !moduleLoaded(f.Modules, "nvidia"):
		mod.Status, mod.Detail = Broken, "the nvidia kernel module is not loaded"
		mod.Cause, mod.Fix = cause, fix
		if mod.Cause == "" && moduleLoaded(f.Modules, "nouveau") {
			mod.Cause, mod.Fix = "the open-source nouveau driver holds the GPUs", "blacklist nouveau (modprobe.d) and rebuild the initramfs, then load nvidia"
		}
		if mod.Cause == "" && secureBoot {
			mod.Cause, mod.Fix = "Secure Boot is on and no load error was logged: the module may never have been signed or installed", loadFailures[0].fix
		}
		if mod.Cause == "" {
			mod.Cause, mod.Fix = "the driver is not installed or its service/driver container did not run", "install the driver (node image or the driver DaemonSet), then `modprobe nvidia` and read `dmesg | grep -i nvidia`"
		}
		if line != "" {
			mod.Detail += "; kernel log: " + line
		}
	default:
		mod.Status, mod.Detail = OK, "nvidia loaded"
		for _, m := range []string{"nvidia_uvm", "nvidia_modeset", "nvidia_peermem"} {
			if moduleLoaded(f.Modules, m) {
				mod.Detail += ", " + m
			}
		}
	}
	ps = append(ps, mod)
	if mod.Status == Broken {
		return ps
	}

	ver := Probe{Name: "driver version", Command: "cat /proc/driver/nvidia/version"}
	if f.DriverVersionFile == "" {
		ver.Status, ver.Detail = Warn, "/proc/driver/nvidia/version not readable"
	} else {
		ver.Status, ver.Detail = OK, strings.TrimSpace(strings.SplitN(f.DriverVersionFile, "\n", 2)[0])
	}
	ps = append(ps, ver)

	dev := Probe{Name: "device nodes", Command: "ls -l /dev/nvidia*"}
	var gpus []string
	has := map[string]bool{}
	for _, n := range f.DevNodes {
		has[n] = true
		if gpuNode.MatchString(n) {
			gpus = append(gpus, n)
		}
	}
	switch {
	case !has["nvidiactl"] || len(gpus) == 0:
		dev.Status, dev.Detail = Broken, fmt.Sprintf("missing device nodes (have: %s)", orNone(f.DevNodes))
		dev.Cause = "the module is loaded but its device nodes were not created"
		dev.Fix = "run `nvidia-modprobe -c 0 -u` (or start nvidia-persistenced); in a container, mount /dev from the host"
	case !has["nvidia-uvm"]:
		dev.Status, dev.Detail = Warn, fmt.Sprintf("%d GPU nodes and nvidiactl, but no nvidia-uvm (CUDA needs it)", len(gpus))
		dev.Fix = "`modprobe nvidia-uvm && nvidia-modprobe -u -c 0`"
	default:
		dev.Status, dev.Detail = OK, fmt.Sprintf("%d GPU nodes, nvidiactl, nvidia-uvm", len(gpus))
	}
	ps = append(ps, dev)
	if dev.Status == Broken {
		return ps
	}

	nv := Probe{Name: "NVML", Command: "nvidia-smi"}
	switch {
	case f.NVMLErr != nil:
		nv.Status, nv.Detail = Broken, f.NVMLErr.Error()
		nv.Cause, nv.Fix = cause, fix
		if nv.Cause == "" {
			nv.Cause = "the management library cannot talk to the loaded driver (library missing from the loader path, or a version mismatch)"
			nv.Fix = "install the driver's user-space libraries matching the module version (libnvidia-ml.so.1); in a container, let the toolkit inject them"
		}
	case f.GPUs == 0:
		nv.Status, nv.Detail = Broken, "NVML initialised but sees no GPU"
		nv.Cause, nv.Fix = "no GPU is bound to the nvidia driver", "check `lspci -k | grep -A3 -i nvidia` and the kernel log"
	default:
		nv.Status, nv.Detail = OK, fmt.Sprintf("NVML answers, %d GPUs", f.GPUs)
	}
	ps = append(ps, nv)
	if nv.Status == Broken {
		return ps
	}

	kl := Probe{Name: "kernel log", Command: "dmesg | grep -E 'NVRM|nvidia'"}
	switch {
	case f.KernelLogErr != nil:
		kl.Status, kl.Detail = Warn, "not readable: "+f.KernelLogErr.Error()
	case line != "":
		kl.Status, kl.Detail, kl.Cause, kl.Fix = Warn, line, cause, fix
	default:
		kl.Status, kl.Detail = OK, "no driver load errors since boot"
	}
	return append(append(ps, kl), gpuProbes(f)...)
}

var gpuNode = regexp.MustCompile(`^nvidia[0-9]+$`)

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}
