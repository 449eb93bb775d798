package apiaudit

import (
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/auditlog"
)

// Spec declares api.audit to the registry (internal/engine/catalogue): its rules (rules.go, shared with `kubeslow
// audit`) judge the audit log's analysis (internal/source/auditlog). It asks nothing of the API: the log is a file or
// the node tier's.
var Spec = measure.Spec{
	Name: auditlog.Name, Kind: measure.ReadOnly, Rules: Rules,
	New: func(o measure.Options) measure.Measurement { return New(o.Window, o.AuditLogs) },
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
