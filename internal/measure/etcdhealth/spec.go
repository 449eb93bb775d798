package etcdhealth

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares etcd.health to the registry (internal/engine/catalogue). It asks nothing of the API itself: etcd is
// read at --etcd-endpoint or through the node tier (whose permissions are the run's); its past-window twin is
// promwindow's etcd measurement.
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly, Rules: Rules,
	New: func(o measure.Options) measure.Measurement { return New(o.Window, o.EtcdEndpoint) },
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
