package controlplane

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// fakeAssets makes an assets folder whose etcd runs script (sh) and whose kube-apiserver
// is never reached.
func fakeAssets(t *testing.T, script string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{EtcdBinary: script, APIServerBinary: "exit 1"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestAFailedStartSaysWhyAndLeavesNothingBehind(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		want   []string
	}{
		{"An etcd that exits at once is reported with its last output.",
			`[ "$1" = --help ] && exit 0; echo "listen tcp: address already in use" >&2; exit 1`,
			[]string{"starting etcd from", "etcd exited (exit status 1)", "address already in use"}},
		{"An etcd that exits successfully at once is reported too: it must keep running.",
			`[ "$1" = --help ] && exit 0; echo "nothing to do"; exit 0`,
			[]string{"etcd exited (exit status 0)", "nothing to do"}},
		{"An etcd that never answers its health check is reported when the start timeout passes.",
			`[ "$1" = --help ] && exit 0; echo "waiting forever"; exec sleep 60`,
			[]string{"etcd not ready within", "waiting forever"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp) // where Start makes its folder
			var out bytes.Buffer
			cp, err := Start(t.Context(), Config{Assets: fakeAssets(t, tc.script), StartTimeout: time.Second, StopTimeout: 5 * time.Second, Output: &out})
			if err == nil {
				t.Fatalf("Start succeeded with a fake etcd (stop: %v)", cp.Stop())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if n := strings.Count(err.Error(), "its last output"); n != 1 {
				t.Errorf("error %q quotes the output %d times; want once", err, n)
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Errorf("the failed start left %v in the temporary folder", left)
			}
			if !strings.Contains(out.String(), strings.Split(tc.want[len(tc.want)-1], "\n")[0]) {
				t.Errorf("Output got %q; want the process's output", out.String())
			}
		})
	}
}

func TestStopKillsAProcessThatIgnoresSIGTERM(t *testing.T) {
	p, err := startProcess("stubborn", "/bin/sh", []string{"-c", `trap "" TERM; echo started; sleep 60 & wait; sleep 60`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pid := p.cmd.Process.Pid
	time.Sleep(200 * time.Millisecond) // let the shell set its trap
	err = p.stop(500 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("stop = %v; want it killed after SIGTERM was ignored", err)
	}
	select {
	case <-p.done:
	default:
		t.Errorf("process %d not reaped after stop", pid)
	}
}

func TestTailKeepsTheEndOfTheOutput(t *testing.T) {
	var tl tail
	if tl.String() != "(none)" {
		t.Errorf("empty tail = %q; want (none)", tl.String())
	}
	for _, w := range []string{strings.Repeat("a", tailSize), "the end\n"} {
		if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(w))
		}
	}
	if got := tl.String(); len(got) != tailSize-1 || !strings.HasSuffix(got, "the end") {
		t.Errorf("tail of %d bytes ending %q; want %d bytes ending with the last write", len(got), got[len(got)-10:], tailSize-1)
	}
}

func TestTheKubeconfigReachesTheServerAsTheAdmin(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:2003", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")}}
	b, err := kubeconfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := clientcmd.RESTConfigFromKubeConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Host != cfg.Host || string(got.CAData) != "ca" || string(got.CertData) != "cert" || string(got.KeyData) != "key" {
		t.Errorf("kubeconfig gives host %s, CA %q, cert %q, key %q; want the config's", got.Host, got.CAData, got.CertData, got.KeyData)
	}
}
