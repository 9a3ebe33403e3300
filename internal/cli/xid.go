package cli

import "github.com/spf13/cobra"

// newXIDCommand groups the XID tools: decode kernel logs, explain one code.
func newXIDCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "xid",
		Short: "Decode NVIDIA XID errors in kernel logs and explain XID codes",
		Long: `XIDs are the NVIDIA driver's error reports in the kernel log. gpunode reads every form
the driver prints (/dev/kmsg records, dmesg, dmesg -T, syslog and journald lines, MIG-attributed
reports, "fallen off the bus" messages, NVSwitch SXids), looks each code up in NVIDIA's XID
catalog and says what it means in gpunode's fault taxonomy: component, severity and action.`,
		Example: `  dmesg | gpunode xid decode
  gpunode xid decode /var/log/kern.log --json
  gpunode xid explain 79`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(newXIDDecodeCommand(), newXIDExplainCommand())
	return cmd
}
