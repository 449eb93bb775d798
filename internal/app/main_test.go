package app

import (
	"testing"

	"github.com/kubeslow/kubeslow/internal/lab/labtest"
)

// TestMain takes down the lab the integration tests shared last (labtest.Shared).
func TestMain(m *testing.M) { labtest.Main(m) }
