package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpunode/gpunode/api/v1alpha1"
	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/gpu/sim"
	"github.com/gpunode/gpunode/internal/health"
	"github.com/gpunode/gpunode/internal/host"
	"github.com/gpunode/gpunode/internal/host/simhost"
	"github.com/gpunode/gpunode/internal/monitor"
	"github.com/gpunode/gpunode/internal/recovery"
	"github.com/gpunode/gpunode/internal/testenv"
	"github.com/gpunode/gpunode/internal/xid"
)

// agentChildEnv makes the test binary an agent process: the value is the path of its
// childSpec. The parent kills it with SIGKILL at random points and starts another.
const agentChildEnv = "GPUNODE_AGENT_CHILD"

// childSpec is what an agent process needs: the API server, its node, the state folder it
// shares with the processes before and after it, and the kernel log since boot (lines each
// process's simulated node logs first: the kernel log outlives the agent).
type childSpec struct {
	Host     string   `json:"host"`
	CAData   []byte   `json:"caData"`
	CertData []byte   `json:"certData"`
	KeyData  []byte   `json:"keyData"`
	Token    string   `json:"token"`
	Node     string   `json:"node"`
	StateDir string   `json:"stateDir"`
	Kernel   []string `json:"kernel"`
}

// stepsLog is the file in the state folder where each process appends, durably, every
// step it starts: what a repeated step would show.
const stepsLog = "steps.log"

// runAgentChild is the agent process: it runs until killed, or until SIGTERM.
func runAgentChild(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var sp childSpec
	if err := json.Unmarshal(b, &sp); err != nil {
		return err
	}
	scheme, err := testenv.Scheme()
	if err != nil {
		return err
	}
	c, err := client.NewWithWatch(&rest.Config{Host: sp.Host, BearerToken: sp.Token, TLSClientConfig: rest.TLSClientConfig{
		CAData: sp.CAData, CertData: sp.CertData, KeyData: sp.KeyData}}, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	sb, err := sim.Load("h100x8")
	if err != nil {
		return err
	}
	for _, l := range sp.Kernel {
		if err := sb.Inject(sim.Fault{Type: sim.FaultKernelLog, Message: l}); err != nil {
			return err
		}
	}
	steps := loggedSteps{sim: recovery.Sim{Backend: sb}, path: filepath.Join(sp.StateDir, stepsLog)}
	cfg := agent.Config{
		NodeName: sp.Node, Client: c, Backend: sb,
		Host:     func(devs []gpu.Device) (*host.Reader, error) { return simhost.Reader(devs, nil) },
		XIDs:     func(context.Context) ([]xid.Event, error) { return simXIDs(sb), nil },
		Kernel:   monitor.SimKernel(sb, 10*time.Millisecond),
		Log:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Interval: 50 * time.Millisecond, MinBackoff: 10 * time.Millisecond, MaxBackoff: 80 * time.Millisecond,
		Steps:   steps,
		Journal: agent.FileJournal{Path: filepath.Join(sp.StateDir, "remediation-step.json")},
		Cleared: agent.FileCleared{Path: filepath.Join(sp.StateDir, "cleared-xids.json")},
		Evidence: func(_ context.Context, req v1alpha1.RemediationRequest, _ []health.Finding) (*v1alpha1.EvidenceSummary, error) {
			if err := steps.log(fmt.Sprintf("capture-evidence %d", req.ID)); err != nil {
				return nil, err
			}
			return &v1alpha1.EvidenceSummary{SHA256: strings.Repeat("ab", 32), Path: "/evidence/x.tar.gz", SizeBytes: 1,
				Created: metav1.Now(), Trigger: req.Reason}, nil
		},
	}
	a, err := agent.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	return a.Run(ctx)
}

// simXIDs are the XIDs of a simulated node's kernel log since boot.
func simXIDs(sb *sim.Backend) []xid.Event {
	var out []xid.Event
	var sc xid.Scanner
	for _, l := range sb.KernelLog() {
		if ev, ok := sc.Line(l.Text); ok {
			out = append(out, ev)
		}
	}
	return out
}

// loggedSteps are the simulated node's steps, each logged (and synced) before it starts.
type loggedSteps struct {
	sim  recovery.Sim
	path string
}

func (s loggedSteps) log(line string) error {
	fh, err := os.OpenFile(s.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := fh.WriteString(line + "\n"); err != nil {
		_ = fh.Close()
		return err
	}
	if err := fh.Sync(); err != nil {
		_ = fh.Close()
		return err
	}
	return fh.Close()
}

// resetTakes is how long a simulated reset takes before and after it acts, as a real one
// takes seconds: a kill at a random point then lands mid-step often enough.
const resetTakes = 100 * time.Millisecond

func (s loggedSteps) ResetGPU(ctx context.Context, uuid string) error {
	if err := s.log("reset-gpu " + uuid); err != nil {
		return err
	}
	time.Sleep(resetTakes)
	if err := s.sim.ResetGPU(ctx, uuid); err != nil {
		return err
	}
	time.Sleep(resetTakes)
	return nil
}

func (s loggedSteps) RebootNode(ctx context.Context) (bool, error) {
	if err := s.log("reboot-node"); err != nil {
		return false, err
	}
	return s.sim.RebootNode(ctx)
}

func (s loggedSteps) PowerCycle(ctx context.Context) (bool, error) { return s.RebootNode(ctx) }

func (s loggedSteps) BootID(ctx context.Context) (string, error) { return s.sim.BootID(ctx) }

// xidLines are the kernel-log lines a simulated XID on GPU index logs.
func xidLines(t *testing.T, code, index int) []string {
	t.Helper()
	sb, err := sim.Load("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	before := len(sb.KernelLog())
	if err := sb.Inject(sim.Fault{Type: sim.FaultXID, GPU: index, XID: code}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range sb.KernelLog()[before:] {
		out = append(out, l.Text)
	}
	return out
}

// agentProcesses starts agent processes of spec one after the other.
type agentProcesses struct {
	t    *testing.T
	spec string
	dir  string
	mu   sync.Mutex
	cur  *exec.Cmd
	n    int
}

func (p *agentProcesses) start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), agentChildEnv+"="+p.spec, "GORACE=atexit_sleep_ms=0")
	logf, err := os.Create(filepath.Join(p.dir, fmt.Sprintf("agent-%d.log", p.n)))
	if err != nil {
		p.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	_ = logf.Close()
	p.cur = cmd
}

// kill sends SIGKILL to the running process and reaps it.
func (p *agentProcesses) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil {
		return
	}
	_ = p.cur.Process.Signal(syscall.SIGKILL)
	_ = p.cur.Wait()
	p.cur = nil
}

// stepsRun are the lines of the steps log.
func stepsRun(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, stepsLog))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "_"))
}

func TestAnAgentKilledAtRandomPointsOfTheLadderNeverRepeatsAStep(t *testing.T) {
	cfg, c := testenv.Start(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill points drawn with seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	name := newNode(t, c, nil)
	dir := t.TempDir()
	const ladders = 6 // GPUs 0-5 each get evidence and a reset; 6 and 7 are sentinels
	var kernel []string
	for g := range ladders {
		kernel = append(kernel, xidLines(t, 95, g)...)
	}
	writeSpec := func(lines []string) string {
		sp := childSpec{Host: cfg.Host, CAData: cfg.CAData, CertData: cfg.CertData, KeyData: cfg.KeyData, Token: cfg.BearerToken,
			Node: name, StateDir: dir, Kernel: lines}
		b, err := json.Marshal(sp)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("spec-%d.json", len(lines)))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	procs := &agentProcesses{t: t, spec: writeSpec(kernel), dir: dir}
	procs.start()
	t.Cleanup(procs.kill)

	// The controller's ladder, GPU by GPU; after each request the agent process is killed
	// with SIGKILL at a random point (up to 400 ms in: before, during or after the step) and
	// a new one started at once, as the kubelet does.
	outcomes := map[int32]v1alpha1.StepOutcome{}
	id := int64(0)
	for g := range int32(ladders) {
		uuid := healthIs(t, c, name, g, v1alpha1.HealthUnhealthy)
		for _, step := range []v1alpha1.RemediationStep{v1alpha1.StepCaptureEvidence, v1alpha1.StepResetGPU} {
			id++
			askForStep(t, c, name, v1alpha1.RemediationRequest{ID: id, Step: step, GPUs: []string{uuid}, Reason: "xid-95"})
			time.Sleep(time.Duration(rng.Int64N(int64(400 * time.Millisecond))))
			procs.kill()
			procs.start()
			ans := answerTo(t, c, name, id)
			t.Logf("GPU %d %s (request %d) answered %s: %s", g, step, id, ans.Outcome, ans.Message)
			outcomes[g] = ans.Outcome
		}
	}
	steps := stepsRun(t, dir)
	t.Logf("%d agent processes killed; steps run: %v", procs.n-1, steps)
	seen := map[string]int{}
	for _, s := range steps {
		if seen[s]++; seen[s] > 1 {
			t.Errorf("step %s ran %d times", s, seen[s])
		}
	}
	// A reset known done (answered Succeeded) cleared its GPU for good; one the process died
	// in before marking it done is answered Failed, and its XID is still judged: never
	// forgotten, never reset again.
	for i, sentinel := range []int32{6, 7} {
		procs.kill()
		procs.spec = writeSpec(append(slices.Clone(kernel), xidLines(t, 95, int(sentinel))...))
		procs.start()
		healthIs(t, c, name, sentinel, v1alpha1.HealthUnhealthy) // every line before it was judged
		for g := range int32(ladders) {
			want := v1alpha1.HealthHealthy
			if outcomes[g] != v1alpha1.OutcomeSucceeded {
				want = v1alpha1.HealthUnhealthy
			}
			if h, err := gpuHealth(c, name, g); err != nil || h.Health != want {
				t.Errorf("GPU %d after restart %d past the ladder (reset %s): %+v (%v), want %s", g, i+1, outcomes[g], h, err, want)
			}
		}
	}
	if got := stepsRun(t, dir); len(got) != len(steps) {
		t.Errorf("steps run after the ladder: %v, want none", got[len(steps):])
	}
}
