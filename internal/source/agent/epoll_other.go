//go:build !linux

package agent

import (
	"context"
	"errors"
	"net"
)

// EpollAvailable reports whether ServeEpoll works on this system.
const EpollAvailable = false

// ServeEpoll is Linux only.
func ServeEpoll(context.Context, *net.TCPListener) error {
	return errors.New("the epoll server is Linux only")
}
