package scale

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Variables that change how the controller runs, to find what a result depends on.
const (
	// envControllerArgs adds flags to `gpunode controller` (e.g. "--kube-api-qps=1000").
	envControllerArgs = "GPUNODE_SCALE_CONTROLLER_ARGS"
	// envControllerMemLimit sets the controller's GOMEMLIMIT (e.g. "400MiB") alone.
	envControllerMemLimit = "GPUNODE_SCALE_CONTROLLER_GOMEMLIMIT"
)

// controllerProcess is `gpunode controller` running as its own process.
type controllerProcess struct {
	cmd     *exec.Cmd
	metrics string // the /metrics URL
	logPath string

	mu      sync.Mutex
	samples []memSample
}

// memSample is one reading of the process's /proc status, in KiB.
type memSample struct {
	at       time.Time
	rss, hwm int
}

// gpunodeBinary is GPUNODE_BIN, or a gpunode built from this tree into a temporary folder.
func gpunodeBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("GPUNODE_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "gpunode")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/gpunode/gpunode/cmd/gpunode").CombinedOutput()
	if err != nil {
		t.Fatalf("building gpunode: %v\n%s", err, out)
	}
	return bin
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// startController runs `bin controller` against cfg without leader election, its metrics on
// a free loopback port and its log in a file, sampling its memory every 250 ms until the
// test ends, when it is stopped with SIGINT.
func startController(t *testing.T, bin string, cfg *rest.Config) *controllerProcess {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatalf("writing the controller's kubeconfig: %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := &controllerProcess{metrics: "http://" + addr + "/metrics", logPath: filepath.Join(dir, "controller.log")}
	logf, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"controller", "--kubeconfig", path, "--leader-elect=false",
		"--metrics-bind-address", addr, "--health-probe-bind-address", "0"}
	p.cmd = exec.Command(bin, append(args, strings.Fields(os.Getenv(envControllerArgs))...)...)
	p.cmd.Env = os.Environ()
	if limit := os.Getenv(envControllerMemLimit); limit != "" {
		p.cmd.Env = append(p.cmd.Env, "GOMEMLIMIT="+limit)
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s controller: %v", bin, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.sample(ctx, 250*time.Millisecond) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = p.cmd.Process.Signal(os.Interrupt)
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("the controller did not stop cleanly: %v (log %s)", err, p.logPath)
		}
		_ = logf.Close()
		if t.Failed() {
			t.Logf("the controller's log, last lines:\n%s", tail(p.logPath, 40))
		}
	})
	return p
}

// sample reads the process's memory every interval until ctx ends.
func (p *controllerProcess) sample(ctx context.Context, every time.Duration) {
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		if s, err := readMemory(p.cmd.Process.Pid); err == nil {
			p.mu.Lock()
			p.samples = append(p.samples, s)
			p.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}

// memory returns the samples taken since since.
func (p *controllerProcess) memory(since time.Time) []memSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []memSample
	for _, s := range p.samples {
		if !s.at.Before(since) {
			out = append(out, s)
		}
	}
	return out
}

// cpuSeconds is the process's user and system CPU time so far.
func (p *controllerProcess) cpuSeconds() (float64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "stat"))
	if err != nil {
		return 0, fmt.Errorf("reading the controller's CPU time: %w", err)
	}
	// Fields after the command name (which ends at the last ')'): utime is the 12th, stime the 13th.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("reading the controller's CPU time: short /proc stat %q", b)
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100, nil // USER_HZ is 100 on Linux
}

// readMemory reads VmRSS and VmHWM of process pid.
func readMemory(pid int) (memSample, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return memSample{}, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	defer func() { _ = f.Close() }()
	s := memSample{at: time.Now()}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "VmRSS:":
			s.rss, _ = strconv.Atoi(fields[1])
		case "VmHWM:":
			s.hwm, _ = strconv.Atoi(fields[1])
		}
	}
	return s, sc.Err()
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
