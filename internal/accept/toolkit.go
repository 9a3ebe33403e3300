package accept

import "strings"

// ToolkitReadiness says whether the container toolkit works on the node: the L0 checks
// host.containerd (an nvidia runtime or CDI in containerd's config, which the policy's
// default "auto" accepts; the toolkit is then needed, so an absent containerd fails) and
// host.cdi (every CDI spec valid and not stale), with the same rules as acceptance. The
// version matrix is not the toolkit's: it is left out. message is the failing check's
// message, or both checks' messages when ready.
func ToolkitReadiness(f *Facts) (ready bool, message string) {
	p := DefaultPolicy()
	p.Host.NVIDIARuntime = "required"
	p.Versions.Containerd = nil
	rt := checkContainerd(f, &p)
	if rt.Status != StatusPass {
		return false, "host.containerd: " + rt.Message
	}
	cdi := checkCDI(f, &p)
	if cdi.Status == StatusFail {
		return false, "host.cdi: " + cdi.Message
	}
	return true, strings.Join([]string{rt.Message, cdi.Message}, "; ")
}
