package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	authorizationcel "k8s.io/apiserver/pkg/authorization/cel"
	"k8s.io/apiserver/plugin/pkg/authorizer/webhook"
	"k8s.io/apiserver/plugin/pkg/authorizer/webhook/metrics"
	"k8s.io/client-go/kubernetes"
)

// retryBackoff is kube-apiserver's default authorization webhook retry
// backoff (k8s.io/apiserver/pkg/server/options DefaultAuthWebhookRetryBackoff,
// not imported for its etcd dependencies).
func retryBackoff() wait.Backoff {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// newSARAuthorizer returns the authorizer behind the CEL authorizer
// variables: k8s.io/apiserver's webhook authorizer sending
// SubjectAccessReviews through client-go, with kube-apiserver's defaults
// for an authorization webhook (allowed answers cached 5m, denied 30s, its
// retry backoff; errors give no opinion, i.e. deny).
func newSARAuthorizer(kube kubernetes.Interface) (authorizer.Authorizer, error) {
	return webhook.NewFromInterface(kube.AuthorizationV1(), DefaultAuthorizedTTL, DefaultUnauthorizedTTL,
		retryBackoff(), authorizer.DecisionNoOpinion,
		metrics.NoopAuthorizerMetrics{}, authorizationcel.NewDefaultCompiler())
}
