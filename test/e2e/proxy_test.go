package e2e

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// outageProxy forwards TCP connections to the API server and can cut them all and refuse
// new ones for a while: an API server outage exactly as its clients see it (connections
// reset, then refused), while etcd and every object stay.
type outageProxy struct {
	target string
	ln     net.Listener

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

func newOutageProxy(t *testing.T, target string) *outageProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &outageProxy{target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() { _ = ln.Close(); p.cut() })
	return p
}

func (p *outageProxy) Addr() string { return p.ln.Addr().String() }

func (p *outageProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = in.Close()
			continue
		}
		out, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			p.mu.Unlock()
			_ = in.Close()
			continue
		}
		p.conns[in], p.conns[out] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

func (p *outageProxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// cut closes every open connection.
func (p *outageProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// Outage cuts every connection and refuses new ones for d.
func (p *outageProxy) Outage(d time.Duration) {
	p.mu.Lock()
	p.down = true
	p.mu.Unlock()
	p.cut()
	time.Sleep(d)
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}
