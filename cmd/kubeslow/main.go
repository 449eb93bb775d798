// Command kubeslow measures a Kubernetes cluster and names why it is slow. See README.md.
package main

import "github.com/kubeslow/kubeslow/internal/app"

func main() { app.Main() }
