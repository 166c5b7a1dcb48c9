package respcache

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine one of them started is still running after they end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
