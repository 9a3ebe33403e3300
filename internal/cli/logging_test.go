package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

func TestLoggingFlagsRejectBadValuesNamingTheFlag(t *testing.T) {
	cases := []struct {
		name string
		args []string
		flag string
	}{
		{"an unknown level is a usage error naming --log-level", []string{"version", "--log-level", "loud"}, "--log-level"},
		{"an unknown format is a usage error naming --log-format", []string{"version", "--log-format", "xml"}, "--log-format"},
		{"a long-running command checks the flags before it starts", []string{"controller", "--log-level", "trace"}, "--log-level"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			execute(t, tc.args...).check(t, ExitUsage, nil, []string{tc.flag})
		})
	}
}

func TestLoggingDefaultsToInfoOnlyForLongRunningCommands(t *testing.T) {
	cases := []struct {
		name  string
		cmd   []string
		level string
		info  bool
	}{
		{"the agent logs from info", []string{"agent"}, "", true},
		{"the controller logs from info", []string{"controller"}, "", true},
		{"the exporter logs from info", []string{"exporter"}, "", true},
		{"the simulated fleet logs from info", []string{"sim", "fleet"}, "", true},
		{"a one-shot command logs only warnings", []string{"accept"}, "", false},
		{"--log-level warn quiets the agent", []string{"agent"}, "warn", false},
		{"--log-level debug is heard by a one-shot command", []string{"doctor"}, "debug", true},
		{"a level is read in any case", []string{"doctor"}, "INFO", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd, _, err := NewRootCommand().Find(tc.cmd)
			if err != nil {
				t.Fatal(err)
			}
			l, err := (&logOptions{level: tc.level, format: "text"}).logger(cmd, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Enabled(context.Background(), slog.LevelInfo); got != tc.info {
				t.Errorf("%s: info enabled %v, want %v", cmd.CommandPath(), got, tc.info)
			}
		})
	}
}

func TestNamedLoggersJoinTheirNames(t *testing.T) {
	cases := []struct {
		name string
		log  func(l *slog.Logger)
		want string // the logger attribute
	}{
		{"a part names itself", func(l *slog.Logger) { l.With(LoggerKey, "agent").Info("m") }, "agent"},
		{"a part of a part joins with a dot", func(l *slog.Logger) {
			l.With(LoggerKey, "agent").With("node", "gpu-1").With(LoggerKey, "monitor").Info("m")
		}, "agent.monitor"},
		{"a name on the line itself joins the logger's", func(l *slog.Logger) { l.With(LoggerKey, "agent").Info("m", LoggerKey, "podresources") }, "agent.podresources"},
		{"controller-runtime's names arrive through logr's slog bridge", func(l *slog.Logger) {
			logr.FromSlogHandler(l.With(LoggerKey, "controller").Handler()).WithName("acceptance").WithName("cache").Info("m")
		}, "controller.acceptance.cache"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			l, err := (&logOptions{level: "info", format: "json"}).logger(NewRootCommand(), &buf)
			if err != nil {
				t.Fatal(err)
			}
			tc.log(l)
			if strings.Count(buf.String(), `"`+LoggerKey+`"`) != 1 {
				t.Fatalf("want exactly one %s key: %s", LoggerKey, buf.String())
			}
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("not one JSON line: %v: %s", err, buf.String())
			}
			if line[LoggerKey] != tc.want || line["msg"] != "m" {
				t.Errorf("line %v, want %s=%s", line, LoggerKey, tc.want)
			}
		})
	}
}

func TestTextLogsKeepTheOtherAttributes(t *testing.T) {
	var buf bytes.Buffer
	l, err := (&logOptions{level: "debug", format: "text"}).logger(NewRootCommand(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	l.With(LoggerKey, "exporter", "node", "gpu-1").Debug("scrape served", "series", 42)
	got := buf.String()
	for _, want := range []string{"level=DEBUG", `msg="scrape served"`, "logger=exporter", "node=gpu-1", "series=42"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}
