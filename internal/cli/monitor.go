package cli

import (
	"context"
	"errors"
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
	output     outputFlags
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
			return runMonitor(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	o.facts.addFlags(fs)
	fs.DurationVar(&o.interval, "interval", 10*time.Second, "counter polling interval")
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long (default: until interrupted)")
	o.output.add(fs, "one item per finding as it happens (a JSON line, or a YAML document), then a summary")
	fs.StringVar(&o.cursorFile, "cursor-file", "", "keep the kernel-log cursor in this file so a restart neither misses nor repeats lines")
	fs.StringVar(&o.from, "from", "boot", "where the kernel log starts: boot (every line since boot), cursor (after --cursor-file), end (new lines only)")
	return cmd
}

// follower is the kernel-log follower of --from and --cursor-file. With a cursor file,
// "boot" reads from boot and keeps the cursor (an unusable one is replaced, with a warning);
// "cursor" needs a usable one: a bad cursor file is bad input (exit 2), naming the file. A
// failed save is logged as a warning and counted in the summary; following goes on.
func (o *monitorOptions) follower(mode kmsg.StartMode) (*kmsg.Follower, error) {
	switch {
	case mode == kmsg.StartCursor && o.cursorFile == "":
		return nil, usageErrorf("--from cursor needs --cursor-file")
	case mode == kmsg.StartCursor:
		if _, _, err := kmsg.LoadCursor(o.cursorFile); err != nil {
			return nil, usageErrorf("--cursor-file: %w (start afresh with --from boot)", err)
		}
	case mode == kmsg.StartBeginning && o.cursorFile != "":
		mode = kmsg.StartBoot
	}
	log := namedLogger("monitor")
	path := o.cursorFile
	return &kmsg.Follower{StatePath: path, Start: mode, MinSaveInterval: time.Second, OnCursorError: func(err error) {
		log.Warn("kernel-log cursor not usable or not saved", "file", path, "err", err)
	}}, nil
}

func runMonitor(ctx context.Context, o *monitorOptions, out, errOut io.Writer) error {
	format, err := o.output.format()
	if err != nil {
		return err
	}
	if o.interval <= 0 || o.duration < 0 {
		return usageErrorf("--interval must be positive and --duration not negative")
	}
	start := map[string]kmsg.StartMode{"boot": kmsg.StartBeginning, "cursor": kmsg.StartCursor, "end": kmsg.StartEnd}
	mode, ok := start[o.from]
	if !ok {
		return usageErrorf("--from %q: want boot, cursor or end", o.from)
	}
	follower, err := o.follower(mode)
	if err != nil {
		return err
	}
	plat, err := o.facts.openPlatform()
	if err != nil {
		return err
	}
	defer func() { _ = plat.Close() }()
	backend := plat.Backend
	// A cursor found unusable while following (ahead of the log) ends the run: exit 2.
	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	kernel := plat.KernelFollower(follower)
	if kernel != nil {
		follow := kernel
		kernel = func(ctx context.Context, emit func(monitor.KernelLine)) error {
			err := follow(ctx, emit)
			if errors.Is(err, kmsg.ErrBadCursor) {
				stopRun(err)
			}
			return err
		}
	}
	var mu sync.Mutex // the callback runs on the monitor's goroutines
	w := &errWriter{w: out}
	m, err := monitor.New(monitor.Config{Backend: backend, Interval: o.interval, Kernel: kernel, BootID: plat.BootID(),
		OnFinding: func(f health.Finding, isNew bool) {
			if !isNew {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if format != formatText {
				_ = writeStreamItem(out, format, struct {
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
	until := "until interrupted (Ctrl-C)"
	if o.duration > 0 {
		until = "for " + o.duration.String()
	}
	notice(errOut, "monitoring the GPUs and the kernel log every %s %s: findings print as they happen, the health summary at the end", o.interval, until)
	if o.duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(runCtx, o.duration)
		defer cancel()
	}
	if err := m.Run(runCtx); err != nil {
		return err
	}
	if cause := context.Cause(runCtx); errors.Is(cause, kmsg.ErrBadCursor) {
		return usageErrorf("--cursor-file: %w (start afresh with --from boot)", cause)
	}
	var cursor *kmsg.Stats
	if st := follower.Stats(); o.cursorFile != "" && st.Start != "" { // "": not followed (--sim's own log)
		cursor = &st
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
	if format != formatText {
		if err := writeStreamItem(out, format, struct {
			Type     string              `json:"type"`
			Health   []monitor.GPUHealth `json:"health"`
			Findings []health.Finding    `json:"findings"`
			Stats    monitor.Stats       `json:"stats"`
			Cursor   *kmsg.Stats         `json:"kernelCursor,omitempty"`
		}{"summary", gpus, m.Findings(), m.Stats(), cursor}); err != nil {
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
		if cursor != nil {
			w.printf("kernel-log cursor %s: started %s, %d saves, %d failed\n", o.cursorFile, orDash(cursor.Start), cursor.Saves, cursor.SaveErrors)
		}
		if w.err != nil {
			return w.err
		}
	}
	if unhealthy > 0 {
		return silentFailure
	}
	return nil
}
