package cli

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// LoggerKey is the attribute that names the part of gpunode a log line comes from. A
// logger named with log.With(LoggerKey, "agent") and then again with
// log.With(LoggerKey, "monitor") writes logger=agent.monitor; controller-runtime's names
// (logr's WithName, written by logr's slog bridge under the same key) join the same way.
const LoggerKey = "logger"

// Log levels and formats, as the flags take them.
var (
	logLevels  = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}
	logFormats = []string{"text", "json"}
)

// longRunning are the commands that run until interrupted: their logs are how they are
// operated, so they log from info by default; the one-shot commands report through their
// output and log only warnings and errors.
var longRunning = map[string]bool{
	"gpunode agent": true, "gpunode controller": true, "gpunode exporter": true,
	"gpunode monitor": true, "gpunode sim fleet": true,
}

// logOptions are the logging flags every command takes.
type logOptions struct {
	level  string
	format string
}

func (o *logOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.level, "log-level", "", "log level: debug, info, warn or error (default: info for agent, controller, exporter, monitor and sim fleet; warn for the others)")
	fs.StringVar(&o.format, "log-format", "text", "log format: text or json (one JSON object a line)")
}

// logger builds the logger for a command from the flags; a bad value is a usage error
// naming the flag.
func (o *logOptions) logger(cmd *cobra.Command, w io.Writer) (*slog.Logger, error) {
	name := o.level
	if name == "" {
		name = "warn"
		if longRunning[cmd.CommandPath()] {
			name = "info"
		}
	}
	level, ok := logLevels[strings.ToLower(name)]
	if !ok {
		return nil, usageErrorf("--log-level %q: must be debug, info, warn or error", o.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch o.format {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, usageErrorf("--log-format %q: must be %s", o.format, strings.Join(logFormats, " or "))
	}
	return slog.New(&namedHandler{inner: h}), nil
}

// namedLogger is the process's logger (set from the flags before a command runs) named
// for one part of gpunode.
func namedLogger(name string) *slog.Logger { return slog.Default().With(LoggerKey, name) }

// namedHandler writes one LoggerKey attribute per line: the names given with With, joined
// by dots, then any name the record carries (logr's WithName, "/"-separated).
type namedHandler struct {
	inner slog.Handler
	name  string
}

func (h *namedHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *namedHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	name, rest := h.name, make([]slog.Attr, 0, len(attrs))
	for _, a := range attrs {
		if a.Key == LoggerKey {
			name = joinName(name, a.Value.String())
			continue
		}
		rest = append(rest, a)
	}
	inner := h.inner
	if len(rest) > 0 {
		inner = inner.WithAttrs(rest)
	}
	return &namedHandler{inner: inner, name: name}
}

func (h *namedHandler) WithGroup(g string) slog.Handler {
	return &namedHandler{inner: h.inner.WithGroup(g), name: h.name}
}

func (h *namedHandler) Handle(ctx context.Context, r slog.Record) error {
	name, named := h.name, false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == LoggerKey {
			name, named = joinName(name, a.Value.String()), true
		}
		return true
	})
	if name == "" {
		return h.inner.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(slog.String(LoggerKey, name))
	r.Attrs(func(a slog.Attr) bool {
		if !named || a.Key != LoggerKey {
			out.AddAttrs(a)
		}
		return true
	})
	return h.inner.Handle(ctx, out)
}

func joinName(base, name string) string {
	name = strings.ReplaceAll(name, "/", ".")
	switch {
	case base == "":
		return name
	case name == "":
		return base
	default:
		return base + "." + name
	}
}
