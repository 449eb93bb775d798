package disk

import "github.com/kubeslow/kubeslow/internal/hostfs"

// The kernel's text files the sampler reads are parsed by internal/hostfs (shared with the node agent and the
// lab, which must not import a measurement); these names keep the sampler's callers unchanged.

// DiskStats is one line of /proc/diskstats.
type DiskStats = hostfs.DiskStats

// PSI is one line of a /proc/pressure file.
type PSI = hostfs.PSI

// ParseDiskStats parses /proc/diskstats.
func ParseDiskStats(b []byte) ([]DiskStats, error) { return hostfs.ParseDiskStats(b) }

// ParsePSI parses /proc/pressure/io (or cpu, memory).
func ParsePSI(b []byte) (some, full PSI, err error) { return hostfs.ParsePSI(b) }

// ProcState returns the state letter of a /proc/<pid>/stat line.
func ProcState(stat []byte) (byte, error) { return hostfs.ProcState(stat) }
