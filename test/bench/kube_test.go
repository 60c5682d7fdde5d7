package bench

import (
	"k8s.io/apimachinery/pkg/runtime"

	kubescheme "github.com/mutatis-dev/mutatis/scheme"
)

// kubeScheme is kube-apiserver's scheme, with its defaulters and
// conversions: the upstream side runs dispatchOne's conversion and
// defaulting with it, as kube-apiserver does.
func kubeScheme() *runtime.Scheme {
	s, err := kubescheme.Kube()
	if err != nil {
		panic(err)
	}
	return s
}
