package migrate

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mutatis-dev/mutatis/cluster"
)

// Admit admits req through ch as `mutatis apply` does and returns what
// kube-apiserver would store, or its refusal: one Side's outcome for one
// object.
func Admit(ctx context.Context, sim *cluster.Cluster, ch cluster.Chain, req cluster.Request) (Outcome, error) {
	decoded, err := sim.DecodeSteps(req)
	var status *apierrors.StatusError
	if errors.As(err, &status) {
		return refusal(status), nil
	}
	if err != nil {
		return Outcome{}, err
	}
	adm, err := sim.Admit(ctx, ch, decoded)
	if err != nil {
		return Outcome{}, err
	}
	warnings := append(append(append(append([]string(nil), decoded.Warnings...), adm.Result.Warnings...), adm.Warnings...), adm.Validation.Warnings...)
	if status, _ := adm.Refusal(); status != nil {
		out := refusal(status)
		out.Warnings = warnings
		return out, nil
	}
	stored := adm.Stored
	if stored == nil {
		stored = adm.Object
	}
	return Outcome{Object: stored, Warnings: warnings}, nil
}

func refusal(s *apierrors.StatusError) Outcome {
	return Outcome{Refused: s.ErrStatus.Message, Code: s.ErrStatus.Code}
}
