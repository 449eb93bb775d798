package hostfs

import "fmt"

// Neighbours counts proc/net/arp's entries (the IPv4 neighbour table of the reader's network namespace).
func (f FS) Neighbours() (n int64, err error) {
	defer recoverParse("net/arp", &err)
	fs, err := f.procfs()
	if err != nil {
		return 0, err
	}
	es, err := fs.GatherARPEntries()
	if err != nil {
		return 0, fmt.Errorf("net/arp: %w", err)
	}
	return int64(len(es)), nil
}

// Uplink is the interface of proc/net/route's first IPv4 default route (destination and mask 0), "" when
// there is none.
func (f FS) Uplink() (iface string, err error) {
	defer recoverParse("net/route", &err)
	fs, err := f.procfs()
	if err != nil {
		return "", err
	}
	rs, err := fs.NetRoute()
	if err != nil {
		return "", err
	}
	for _, r := range rs {
		if r.Destination == 0 && r.Mask == 0 {
			return r.Iface, nil
		}
	}
	return "", nil
}

// recoverParse turns a panic of a procfs parser into an error of what: procfs v0.22.0's meminfo parser, for
// one, indexes a line's second field unchecked. A kernel never writes such a line, but a fixture or a broken
// mount could, and the reader must report it rather than die.
func recoverParse(what string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: unparsable (%v)", what, r)
	}
}
