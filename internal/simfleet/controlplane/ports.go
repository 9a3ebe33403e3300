package controlplane

import (
	"errors"
	"fmt"
	"net"
)

// freePorts picks three distinct free loopback ports: each is listened on until all
// are picked, so that none is handed out twice, then freed for the processes. Another
// process may still take one in between; the process that loses exits with
// "address already in use", which Start reports.
func freePorts() (ports, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var got [3]int
	for i := range got {
		l, err := net.Listen("tcp", net.JoinHostPort(Host, "0"))
		if err != nil {
			return ports{}, fmt.Errorf("picking a free port on %s: %w", Host, err)
		}
		ls = append(ls, l)
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return ports{}, errors.New("picking a free port: the listener's address is not TCP")
		}
		got[i] = addr.Port
	}
	return ports{etcdClient: got[0], etcdPeer: got[1], apiServer: got[2]}, nil
}
