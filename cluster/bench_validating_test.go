package cluster

import (
	"testing"

	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/validating"
)

// withValidatingPolicies puts the ValidatingAdmissionPolicies of
// yamlText into ch (BenchmarkClusterAdmit). Its own file: BenchmarkClusterAdmit
// builds at the commits before the validating stage with a stub of it
// that skips (docs/performance.md, "Session 15: the chain restructured").
func withValidatingPolicies(b *testing.B, c *Cluster, ch *Chain, yamlText string) {
	set, err := manifest.Parse("vap.yaml", []byte(yamlText))
	if err != nil {
		b.Fatal(err)
	}
	vps, vbs := set.ValidatingAPIObjects()
	if len(vps) == 0 || len(vbs) == 0 {
		b.Fatal("no ValidatingAdmissionPolicy in the fixture")
	}
	if ch.ValidatingPolicies, err = c.ValidatingPolicies(validating.NewCompiler(), vps, vbs); err != nil {
		b.Fatal(err)
	}
}

// validations counts the ValidatingAdmissionPolicies' records of adm's
// validating stage.
func validations(adm *Admission) int { return len(adm.Validation.Validations) }
