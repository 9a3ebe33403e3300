package rules

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/fault"
)

// Fix is what a person does about one outcome on one GPU: the fix of its cause, not of the
// action alone (a narrow PCIe link and a pending row remap both need a reset to clear the
// finding, but only the remap is repaired by it). gpu is the GPU as `nvidia-smi -i` takes
// it. A cause this package does not judge returns "".
func Fix(cause string, a fault.Action, gpu string) string {
	reset := fmt.Sprintf("drain the GPU's work, then reset it (`nvidia-smi -r -i %s`, or let gpunode's remediation do it)", gpu)
	switch {
	case cause == CauseGPULost:
		return "capture `dmesg`, drain the node and reboot it: a GPU that does not answer comes back only with a reboot; one that is lost again after the reboot is a seating, power or hardware fault (open a hardware ticket)"
	case cause == CauseUnreadable:
		return fmt.Sprintf("the driver could not report these facts: check `nvidia-smi -q -i %s` and `dmesg | grep NVRM`; a driver that answers nothing needs a reload", gpu)
	case cause == CauseECCUncorrected && a.Rank() < fault.ActionResetGPU.Rank():
		return "the error was contained: restart the application that hit it (its results since the error are suspect); the GPU stays in service, and a second error before a reset takes it out"
	case cause == CauseECCUncorrected:
		return reset + "; the reset also applies a pending row remap. Errors that come back after the reset mean a hardware ticket"
	case cause == CauseECCCorrected || cause == CauseECCCorrectedRate:
		return "corrected errors are handled by the GPU: watch the trend (`gpunode monitor`); a row remap or page retirement follows when the memory degrades"
	case cause == CauseECCAggregate:
		return "history only: the GPU's lifetime count; nothing to do unless errors since the last reset follow"
	case cause == CauseRowRemapPending:
		return reset + "; the reset applies the remap"
	case cause == CauseRowRemapFailure:
		return "the GPU's memory has no spare rows left: drain the node and have the GPU serviced (RMA); it must not take work again"
	case cause == CauseRowRemapRows:
		return "many remapped rows: the GPU works, but its memory is wearing; plan a replacement with the vendor"
	case cause == CauseRetiredPending:
		return reset + "; the reset retires the pages"
	case cause == CauseRetiredLimit:
		return "more retired pages than the limit: drain the node and have the GPU serviced (RMA)"
	case cause == CauseTemperature:
		return "check airflow, fans, inlet temperature and the data-centre cooling for this rack"
	case cause == CausePowerDraw:
		return "an idle GPU drawing near its limit is faulty: drain it and open a hardware ticket"
	case cause == CausePowerLimit:
		return fmt.Sprintf("restore the default power limit (`nvidia-smi -i %s -pl DEFAULT_W`) in the node image, or fix the policy", gpu)
	case strings.HasPrefix(cause, "clock-"):
		return "hardware slowdown means overheating or a power-brake signal: check cooling and the PSU/power-brake cabling"
	case cause == CausePCIeReplays || cause == CausePCIeReplayRate:
		return "many PCIe replays mean a marginal link: reseat the GPU or its riser at the next maintenance; open a hardware ticket if it continues"
	case cause == CausePCIeLinkWidth:
		return "a link narrower than the GPU's is a slot, riser or cable fault: drain the node, reseat the GPU or its riser (a reset retrains the link, but one that trains narrow again needs the reseat), or open a hardware ticket"
	case cause == CausePCIeLinkGen:
		return "a busy GPU below its link generation: check the BIOS PCIe generation setting and the riser; rerun acceptance under load"
	case strings.HasPrefix(cause, "nvlink-down-"):
		return "schedule no peer-to-peer work on the GPU; check `nvidia-smi nvlink -s` and the fabric manager's log, then reset the GPU; a link that stays down after the reset is the baseboard (open a hardware ticket)"
	case cause == CauseFabric:
		return "start or restart nvidia-fabricmanager (`systemctl restart nvidia-fabricmanager`) and check its log; the GPU cannot use NVLink until registration completes (a GPU reset does not register it)"
	case cause == CauseRecoveryAction:
		return actionFix(a, reset)
	}
	return ""
}

// actionFix is the fix of the driver's own recovery action: the driver has decided.
func actionFix(a fault.Action, reset string) string {
	switch a {
	case fault.ActionDrainP2P:
		return "let running work finish and schedule no peer-to-peer work until the GPU is reset"
	case fault.ActionResetGPU:
		return reset
	case fault.ActionRebootNode:
		return "drain the node and reboot it, as the driver asks"
	}
	return "do what the driver asks, then rerun acceptance"
}
