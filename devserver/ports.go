package devserver

import (
	"net"
	"strconv"
)

// reservations holds listeners that keep chosen ports from being handed out
// twice until the servers bind them.
type reservations struct {
	ls []net.Listener
}

// reserve listens on ip:want, or on a free port of ip if want is taken or
// 0, and returns the port.
func (r *reservations) reserve(ip string, want int) (int, error) {
	var l net.Listener
	if want > 0 {
		// A taken port is no error: a free one is chosen below.
		l, _ = net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(want)))
	}
	if l == nil {
		var err error
		if l, err = net.Listen("tcp", net.JoinHostPort(ip, "0")); err != nil {
			return 0, err
		}
	}
	r.ls = append(r.ls, l)
	return l.Addr().(*net.TCPAddr).Port, nil
}

// closeAll releases every reserved port. It may be called more than once.
func (r *reservations) closeAll() {
	for _, l := range r.ls {
		_ = l.Close()
	}
	r.ls = nil
}
