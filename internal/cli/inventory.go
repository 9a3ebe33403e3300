package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/accept"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/labels"
	"github.com/gpunode/gpunode/internal/xid"
)

type inventoryOptions struct {
	facts        factOptions
	output       outputFlags
	labels       bool
	labelMapping string
	quiet        bool
}

func newInventoryCommand() *cobra.Command {
	o := &inventoryOptions{}
	cmd := &cobra.Command{
		Use:   "inventory",
		Short: "Print every fact about this node's GPUs and host",
		Long: `Print every fact gpunode reads: each GPU (model, UUID, serial, memory, PCIe, VBIOS,
ECC, row remapping, NVLink, fabric, recovery action, ...), the driver, the host (OS, kernel,
boot parameters, cgroups, Secure Boot, NUMA, SMT, /dev/shm, hugepages, disks, time sync,
containerd, CDI specs, kubelet reservations) and the XIDs in the kernel log.

--labels prints the node labels gpunode publishes, one key=value per line: NVIDIA GPU Feature
Discovery's keys with their exact value formats, and the vendor-neutral gpunode.dev/ platform
labels (accelerator class from a mapping with built-in defaults; see docs/labels.md).`,
		Example: `  gpunode inventory
  gpunode inventory --json | jq '.gpu.devices[].uuid'
  gpunode inventory --labels --sim h200x8
  gpunode inventory --labels --label-mapping /etc/gpunode/classes.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runInventory(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	o.facts.addFlags(fs)
	o.output.add(fs, "every fact")
	fs.BoolVar(&o.labels, "labels", false, "print the node labels as key=value lines")
	fs.StringVar(&o.labelMapping, "label-mapping", "", "accelerator-class mapping YAML that extends or overrides the built-in one")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}

// inventoryDoc is the JSON document of `gpunode inventory --json`.
type inventoryDoc struct {
	Node         string            `json:"node"`
	GPU          *gpu.Snapshot     `json:"gpu,omitempty"`
	GPUError     string            `json:"gpuError,omitempty"`
	Host         *host.Facts       `json:"host,omitempty"`
	HostError    string            `json:"hostError,omitempty"`
	XIDs         []xid.Event       `json:"xids"`
	KernelLogErr string            `json:"kernelLogError,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
}

func runInventory(ctx context.Context, o *inventoryOptions, out, errOut io.Writer) error {
	mapping := labels.Mapping{}
	if o.labelMapping != "" {
		m, err := labels.LoadMapping(o.labelMapping)
		if err != nil {
			return usageError(err)
		}
		mapping = m
	}
	format, err := o.output.format()
	if err != nil {
		return err
	}
	quiet := o.quiet || format != formatText || o.labels
	g, err := gather(ctx, &o.facts, newProgress(errOut, quiet))
	if err != nil {
		return err
	}
	defer g.Close()
	f := g.Facts
	lbls := nodeLabels(f, mapping)
	switch {
	case o.labels:
		if f.GPU == nil {
			return fmt.Errorf("no labels without GPU facts: %w", f.GPUErr)
		}
		_, err := io.WriteString(out, labels.Format(lbls))
		return err
	case format != formatText:
		doc := inventoryDoc{Node: f.Node, GPU: f.GPU, Host: f.Host, XIDs: f.XIDs, Labels: lbls}
		if doc.XIDs == nil {
			doc.XIDs = []xid.Event{}
		}
		doc.GPUError, doc.HostError, doc.KernelLogErr = errText(f.GPUErr), errText(f.HostErr), errText(f.KernelLogErr)
		return writeDocument(out, format, doc)
	}
	return inventoryText(out, f, lbls)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// nodeLabels are the discovery and platform labels; none without GPU facts.
func nodeLabels(f *accept.Facts, m labels.Mapping) map[string]string {
	if f.GPU == nil {
		return nil
	}
	node := labels.NodeInfo{}
	if f.Host != nil {
		node.Machine = f.Host.Platform.ProductName
	}
	out := labels.Discovery(f.GPU, node, labels.Config{})
	for k, v := range labels.Platform(f.GPU, m) {
		out[k] = v
	}
	return out
}

func inventoryText(out io.Writer, f *accept.Facts, lbls map[string]string) error {
	w := &errWriter{w: out}
	w.printf("Node: %s\n\n", f.Node)
	if f.GPU == nil {
		w.printf("GPUs: unavailable: %v\n", f.GPUErr)
	} else {
		d := f.GPU.Driver
		w.printf("Driver: %s  CUDA: %s  library: %s  backend: %s\n\n", orDash(d.Version), orDash(d.CUDAVersion), orDash(d.LibraryVersion), f.GPU.Backend)
		w.printf("%-3s %-26s %-40s %-16s %-10s %-10s %s\n", "#", "MODEL", "UUID", "BUS", "MEMORY", "PCIE", "TEMP/POWER")
		for _, g := range f.GPU.Devices {
			w.printf("%-3d %-26s %-40s %-16s %-10s %-10s %d°C %.0f/%.0fW\n", g.Index, g.Name, g.UUID, g.PCI.BusID,
				fmt.Sprintf("%dMiB", g.Memory.TotalMiB), fmt.Sprintf("gen%d x%d", g.PCI.LinkGen, g.PCI.LinkWidth), g.Thermal.GPUC, g.Power.DrawW, g.Power.LimitW)
		}
	}
	w.printf("\n")
	if f.Host == nil {
		w.printf("Host: unavailable: %v\n", f.HostErr)
	} else {
		for _, l := range hostSummary(f.Host) {
			w.printf("%s\n", l)
		}
	}
	w.printf("\nXIDs since boot: %d", len(f.XIDs))
	if f.KernelLogErr != nil {
		w.printf(" (kernel log: %v)", f.KernelLogErr)
	}
	w.printf("\n")
	if len(lbls) > 0 {
		w.printf("\nLabels:\n%s", indent(labels.Format(lbls)))
	}
	w.printf("\nFor every fact: gpunode inventory --json\n")
	return w.err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return "  " + strings.Join(lines, "\n  ") + "\n"
}
