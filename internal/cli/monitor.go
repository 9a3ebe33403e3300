package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/kmsg"
	"github.com/gpunode/gpunode/internal/monitor"
)

type monitorOptions struct {
	facts      factOptions
	interval   time.Duration
	duration   time.Duration
	json       bool
	cursorFile string
	from       string
}

func newMonitorCommand() *cobra.Command {
	o := &monitorOptions{}
	cmd := &cobra.Command{
		Use:   "monitor",
		Short: "Watch this node's GPUs for faults: kernel log, device events and counters",
		Long: `Run the health monitor the agent runs, in the foreground: follow the kernel log
(/dev/kmsg: XIDs, correlated per GPU; kernel records only), watch the driver's device events
(XID, single/double-bit ECC, recovery action, GPU unavailable) and poll the counters (ECC,
row remapping, retired pages, PCIe replays and link, NVLink, slowdown reasons, fabric, the
recovery-action field). Each fault becomes one finding per GPU and cause, however often it
repeats, and moves its GPU's health: healthy, degraded, or unhealthy with the action it needs.

New findings print as they happen; at the end (--duration, or Ctrl-C) the health of every
GPU. Exit codes: 0 no GPU unhealthy, 1 a GPU is unhealthy, 2 bad usage.`,
		Example: `  gpunode monitor --duration 60s
  gpunode monitor --json --cursor-file /var/lib/gpunode/kmsg.cursor
  gpunode monitor --sim examples/scenarios/h100x8-xid79.yaml --duration 45s --interval 1s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMonitor(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	o.facts.addFlags(fs)
	fs.DurationVar(&o.interval, "interval", 10*time.Second, "counter polling interval")
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long (default: until interrupted)")
	fs.BoolVar(&o.json, "json", false, "print JSON lines: one per finding, then a summary")
	fs.StringVar(&o.cursorFile, "cursor-file", "", "keep the kernel-log cursor in this file so a restart neither misses nor repeats lines")
	fs.StringVar(&o.from, "from", "boot", "where the kernel log starts: boot (every line since boot), cursor (after --cursor-file), end (new lines only)")
	return cmd
}

func runMonitor(ctx context.Context, o *monitorOptions, out io.Writer) error {
	if o.interval <= 0 || o.duration < 0 {
		return usageErrorf("--interval must be positive and --duration not negative")
	}
	start := map[string]kmsg.StartMode{"boot": kmsg.StartBeginning, "cursor": kmsg.StartCursor, "end": kmsg.StartEnd}
	mode, ok := start[o.from]
	if !ok {
		return usageErrorf("--from %q: want boot, cursor or end", o.from)
	}
	if mode == kmsg.StartCursor && o.cursorFile == "" {
		return usageErrorf("--from cursor needs --cursor-file")
	}
	plat, err := o.facts.openPlatform()
	if err != nil {
		return err
	}
	defer func() { _ = plat.Close() }()
	backend := plat.Backend
	kernel := plat.KernelFollower(&kmsg.Follower{StatePath: o.cursorFile, Start: mode, MinSaveInterval: time.Second})
	var mu sync.Mutex // the callback runs on the monitor's goroutines
	enc := json.NewEncoder(out)
	w := &errWriter{w: out}
	m, err := monitor.New(monitor.Config{Backend: backend, Interval: o.interval, Kernel: kernel, BootID: plat.BootID(),
		OnFinding: func(f health.Finding, isNew bool) {
			if !isNew {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if o.json {
				_ = enc.Encode(struct {
					Type string `json:"type"`
					health.Finding
				}{"finding", f})
				return
			}
			w.printf("%s %s\n", time.Now().Format("15:04:05"), f)
		}})
	if err != nil {
		return err
	}
	runCtx := ctx
	if o.duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	if err := m.Run(runCtx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	gpus := m.Health()
	unhealthy := 0
	for _, g := range gpus {
		if g.Health == health.Unhealthy {
			unhealthy++
		}
	}
	if o.json {
		if err := enc.Encode(struct {
			Type     string              `json:"type"`
			Health   []monitor.GPUHealth `json:"health"`
			Findings []health.Finding    `json:"findings"`
			Stats    monitor.Stats       `json:"stats"`
		}{"summary", gpus, m.Findings(), m.Stats()}); err != nil {
			return err
		}
	} else {
		st := m.Stats()
		w.printf("\n%-3s %-40s %-10s %-12s %s\n", "#", "UUID", "HEALTH", "ACTION", "CAUSES")
		for _, g := range gpus {
			w.printf("%-3d %-40s %-10s %-12s %s\n", g.Index, g.UUID, g.Health, g.Action, orDash(strings.Join(g.Causes, ", ")))
		}
		w.printf("\n%d polls, %d device events (watched: %v), %d kernel-log lines (followed: %v, %d lost), %d XIDs (%d consequences), %d findings\n",
			st.Polls, st.Events, st.EventsWatched, st.KernelLines, st.KernelFollow, st.KernelLost, st.XIDs, st.Consequences, len(m.Findings()))
		if w.err != nil {
			return w.err
		}
	}
	if unhealthy > 0 {
		return silentFailure
	}
	return nil
}
