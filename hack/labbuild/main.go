// Command labbuild is `kubeslow lab build` without the rest of kubeslow: the lab's build needs only
// internal/lab/build, which compiles in seconds, where kubeslow's own go build (client-go and the rest) takes
// ~90 s cold. `make test` runs it (go run ./hack/labbuild) beside that build, so that on an empty cache the two
// share the machine instead of one waiting for the other. The same cache, lock, steps and output as
// `kubeslow lab build [--with ...]`, which a later call finds up to date.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kubeslow/kubeslow/internal/lab/build"
)

func main() {
	with := flag.String("with", "", "also build these optional components, comma-separated: "+strings.Join(build.Optional(), ", "))
	flag.Parse()
	if err := run(*with); err != nil {
		fmt.Fprintln(os.Stderr, "labbuild:", err)
		os.Exit(1)
	}
}

func run(with string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := build.DefaultCache()
	if err != nil {
		return err
	}
	var names []string
	if with != "" {
		names = strings.Split(with, ",")
	}
	man, err := build.Build(ctx, c, func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }, names...)
	if err != nil {
		return err
	}
	return man.WriteTable(os.Stdout)
}
