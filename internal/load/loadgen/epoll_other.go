//go:build !linux

package loadgen

import (
	"context"
	"errors"
)

const epollAvailable = false

func runEpoll(context.Context, *Config, []byte, *Result) error {
	return errors.New("the epoll engine is Linux only")
}
