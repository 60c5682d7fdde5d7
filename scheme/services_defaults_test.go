package scheme

import (
	"testing"

	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
)

// TestServiceDefaults: the Service ranges the registry is built with are
// kube-apiserver's defaults.
func TestServiceDefaults(t *testing.T) {
	if got, want := defaultServiceIPCIDR.String(), kubeoptions.DefaultServiceIPCIDR.String(); got != want {
		t.Errorf("service IP range %s, kube-apiserver's default %s", got, want)
	}
	if got, want := defaultServiceNodePortRange, kubeoptions.DefaultServiceNodePortRange; got != want {
		t.Errorf("node port range %v, kube-apiserver's default %v", got, want)
	}
}
