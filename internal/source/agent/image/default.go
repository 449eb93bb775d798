package agentimage

import (
	"regexp"

	"golang.org/x/mod/semver"

	"github.com/kubeslow/kubeslow/internal/version"
)

// Repository is where each release's agent image is published, tagged with the release's version.
const Repository = "ghcr.io/kubeslow/kubeslow"

// NoImage is why an agent image is missing, and what to do: a development build has no default.
const NoImage = "no agent image: push one with `kubeslow image push REF` and pass --agent-image REF"

// describeSuffix is what `git describe` adds to a tag for a commit after it (-N-gHASH) or a dirty tree.
var describeSuffix = regexp.MustCompile(`(-[0-9]+-g[0-9a-f]+)?(-dirty)?$`)

// Default is the release's agent image, Repository tagged with the build's version, or "" for a build that is
// not a release (a version that is not a full semantic version vX.Y.Z[-PRERELEASE], a commit after a tag, or a
// dirty tree).
func Default() string {
	v, _ := version.Get()
	return DefaultFor(v)
}

// DefaultFor is Default for version v.
func DefaultFor(v string) string {
	if !semver.IsValid(v) || semver.Canonical(v) != v || describeSuffix.FindString(v) != "" {
		return ""
	}
	return Repository + ":" + v
}
