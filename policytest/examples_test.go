package policytest_test

import (
	"testing"

	"github.com/mutatis-dev/mutatis/policytest"
)

// TestExamples runs the suites of every example policy (make test runs
// them in CI).
func TestExamples(t *testing.T) {
	policytest.Run(t, "../examples")
}
