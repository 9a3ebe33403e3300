package recovery

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpunode/gpunode/internal/gpu"
)

// procs is a ProcessLister with fixed answers.
type procs map[string][]gpu.Process

func (p procs) Processes(_ context.Context, uuid string) ([]gpu.Process, error) {
	got, ok := p[uuid]
	if !ok {
		return nil, errors.New("no such GPU " + uuid)
	}
	return got, nil
}

// recorder is a Runner that records the commands and answers with out and err.
type recorder struct {
	ran [][]string
	out string
	err error
}

func (r *recorder) run(_ context.Context, argv []string) ([]byte, error) {
	r.ran = append(r.ran, argv)
	return []byte(r.out), r.err
}

func TestHostSteps(t *testing.T) {
	idleGPU := procs{"GPU-a": nil, "GPU-b": {{PID: 31, Kind: "compute"}}}
	tests := []struct {
		name    string
		host    Host
		step    func(h *Host) error
		wantRan [][]string
		wantErr string
		refused bool
	}{
		{"an idle GPU is reset with the driver's tool by default", Host{Processes: idleGPU},
			func(h *Host) error { return h.ResetGPU(context.Background(), "GPU-a") },
			[][]string{{"nvidia-smi", "--gpu-reset", "-i", "GPU-a"}}, "", false},
		{"a configured reset command gets the GPU's UUID", Host{Processes: idleGPU, ResetCommand: []string{"/opt/reset.sh", "--uuid={gpu}"}},
			func(h *Host) error { return h.ResetGPU(context.Background(), "GPU-a") },
			[][]string{{"/opt/reset.sh", "--uuid=GPU-a"}}, "", false},
		{"a GPU with a process on it is not reset", Host{Processes: idleGPU},
			func(h *Host) error { return h.ResetGPU(context.Background(), "GPU-b") },
			nil, "31 (compute)", true},
		{"a GPU whose processes cannot be listed is not reset", Host{Processes: idleGPU},
			func(h *Host) error { return h.ResetGPU(context.Background(), "GPU-z") },
			nil, "no such GPU GPU-z", true},
		{"without a process lister no GPU is reset", Host{},
			func(h *Host) error { return h.ResetGPU(context.Background(), "GPU-a") },
			nil, "cannot tell which processes", true},
		{"a reboot without a configured mechanism is refused", Host{},
			func(h *Host) error { _, err := h.RebootNode(context.Background()); return err },
			nil, "--reboot-command", true},
		{"a power cycle without a hook is refused", Host{},
			func(h *Host) error { _, err := h.PowerCycle(context.Background()); return err },
			nil, "--power-cycle-command", true},
		{"a configured reboot runs its command", Host{RebootCommand: []string{"systemctl", "reboot"}},
			func(h *Host) error { _, err := h.RebootNode(context.Background()); return err },
			[][]string{{"systemctl", "reboot"}}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			h := tt.host
			h.Run = r.run
			err := tt.step(&h)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("error = %v, want none", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if got := errors.Is(err, ErrRefused); got != tt.refused {
				t.Errorf("errors.Is(err, ErrRefused) = %v, want %v", got, tt.refused)
			}
			if !slices.EqualFunc(r.ran, tt.wantRan, slices.Equal) {
				t.Errorf("ran %q, want %q", r.ran, tt.wantRan)
			}
		})
	}
}

func TestAFailingCommandIsAFailureWithItsLastOutputLine(t *testing.T) {
	r := &recorder{out: "Resetting GPU...\nGPU 00000000:18:00.0 is currently in use by another process.\n", err: errors.New("exit status 255")}
	h := Host{Processes: procs{"GPU-a": nil}, Run: r.run}
	err := h.ResetGPU(context.Background(), "GPU-a")
	if err == nil || errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "in use by another process") || !strings.Contains(err.Error(), "exit status 255") {
		t.Errorf("error = %v, want a failure (not a refusal) with the exit status and the tool's last line", err)
	}
}

func TestBootIDIsReadFromTheHostRoot(t *testing.T) {
	root := fstest.MapFS{bootIDPath: {Data: []byte("0f2b3c5e-1111-2222-3333-444455556666\n")}}
	id, err := (&Host{Root: root}).BootID(context.Background())
	if err != nil || id != "0f2b3c5e-1111-2222-3333-444455556666" {
		t.Errorf("BootID = %q, %v", id, err)
	}
	if _, err := (&Host{Root: fstest.MapFS{}}).BootID(context.Background()); err == nil || !strings.Contains(err.Error(), "boot_id") {
		t.Errorf("BootID without the file = %v, want an error naming it", err)
	}
}
