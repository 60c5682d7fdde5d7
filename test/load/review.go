package load

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/manifest"
	"github.com/mutatis-dev/mutatis/scheme/admissionplugins"
)

// DefaultUser sends the load's requests: the ReplicaSet controller, which
// creates the Pods of Deployments.
func DefaultUser() user.Info {
	return &user.DefaultInfo{
		Name:   "system:serviceaccount:kube-system:replicaset-controller",
		UID:    "3f1a2b4c-5d6e-4f70-8a91-b2c3d4e5f607",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", user.AllAuthenticated},
	}
}

// Reviews are the AdmissionReview bodies of one CREATE request, identical
// but for the request uid: the review is encoded once and a uid spliced in
// per send, so that the generator spends its CPU on sending, not encoding.
type Reviews struct {
	prefix, suffix []byte
	// run makes the uids of this Reviews unique across runs.
	run uint32
}

// uidPlaceholder marks where the uid goes in the encoded review.
const uidPlaceholder = "mutatis-load-uid-placeholder"

// NewReviews encodes the admission.k8s.io/v1 AdmissionReview kube-apiserver
// would send for creating obj (built-in kinds in the JSON their Go types
// encode, as `mutatis review` sends them) by user (nil: DefaultUser).
func NewReviews(obj *unstructured.Unstructured, u user.Info) (*Reviews, error) {
	if u == nil {
		u = DefaultUser()
	}
	// As `mutatis review`: kube-apiserver's default admission plugins but
	// ServiceAccount, which needs the cluster's ServiceAccounts.
	sim, err := cluster.New(nil, cluster.Options{AdmissionPlugins: admissionplugins.Flags{Disable: []string{"ServiceAccount"}}})
	if err != nil {
		return nil, err
	}
	obj = obj.DeepCopy()
	attrs, err := sim.Attributes(cluster.Request{
		Object: obj, User: u,
		Options: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}},
	})
	if err != nil {
		return nil, err
	}
	normalized, err := sim.Patcher().Normalize(obj.Object, attrs.Kind)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(normalized)
	if err != nil {
		return nil, err
	}
	req := attrs.AdmissionRequest(attrs.Resource, attrs.Kind)
	req.UID = types.UID(uidPlaceholder)
	req.Object = runtime.RawExtension{Raw: raw}
	body, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		return nil, err
	}
	prefix, suffix, ok := bytes.Cut(body, []byte(uidPlaceholder))
	if !ok || bytes.Contains(suffix, []byte(uidPlaceholder)) {
		return nil, fmt.Errorf("load: the object must not contain %q", uidPlaceholder)
	}
	var run [4]byte
	if _, err := rand.Read(run[:]); err != nil {
		return nil, err
	}
	return &Reviews{prefix: prefix, suffix: suffix, run: binary.BigEndian.Uint32(run[:])}, nil
}

// ReadObject reads the one object of a manifest file.
func ReadObject(ctx context.Context, file string) (*unstructured.Unstructured, error) {
	set, err := manifest.Load(ctx, []string{file}, nil)
	if err != nil {
		return nil, err
	}
	if len(set.Objects) != 1 || len(set.Policies)+len(set.Bindings) != 0 {
		return nil, fmt.Errorf("%s: want exactly one object, found %d", file, len(set.Objects)+len(set.Policies)+len(set.Bindings))
	}
	return set.Objects[0].Object, nil
}

// UID is the request uid of send seq: a UUID made of the run's random
// prefix and seq, unique within and (but for a 2^-32 chance) across runs.
func (r *Reviews) UID(seq int) string {
	// fmt.Sprintf("%08x-0000-4000-8000-%012x", r.run, seq mod 2^48),
	// without fmt (TestUIDIsTheFormattedRunAndSeq).
	b := make([]byte, 0, 36)
	b = appendHex(b, uint64(r.run), 8)
	b = append(b, "-0000-4000-8000-"...)
	b = appendHex(b, uint64(seq)&(1<<48-1), 12)
	return string(b)
}

// appendHex appends the width lowest hex digits of v, lower case.
func appendHex(b []byte, v uint64, width int) []byte {
	const digits = "0123456789abcdef"
	for i := width - 1; i >= 0; i-- {
		b = append(b, digits[(v>>(4*uint(i)))&0xf])
	}
	return b
}

// Body is the review with request uid uid.
func (r *Reviews) Body(uid string) []byte {
	b := make([]byte, 0, len(r.prefix)+len(uid)+len(r.suffix))
	b = append(b, r.prefix...)
	b = append(b, uid...)
	return append(b, r.suffix...)
}

// Size is the length of a body in bytes.
func (r *Reviews) Size() int { return len(r.prefix) + len(r.suffix) + len(r.UID(0)) }
