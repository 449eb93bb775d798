// Package version carries the build's identity, set with -ldflags -X at build time.
package version

import "runtime/debug"

// Version and Commit are overridden by the Makefile's -ldflags.
var (
	Version = "dev"
	Commit  = ""
)

// Get returns the version and the VCS revision (from -X or the Go build info).
func Get() (version, commit string) {
	version, commit = Version, Commit
	if commit == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					commit = s.Value
				}
			}
		}
	}
	return version, commit
}
