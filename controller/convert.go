package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mutatis-dev/mutatis/manifest"
)

// convertedObject is the v1 form of one revision of a policy or binding, or
// why it has none.
type convertedObject struct {
	policy  *admissionregistrationv1.MutatingAdmissionPolicy
	binding *admissionregistrationv1.MutatingAdmissionPolicyBinding
	err     error
}

// revisionKey identifies the revision of an object whose spec matters. Shadow
// objects have a status subresource, so their generation (moved by spec
// changes only) keeps status updates from causing a recompilation.
func revisionKey(u *unstructured.Unstructured) string {
	id := string(u.GetUID())
	if id == "" {
		id = u.GetName()
	}
	if g := u.GetGeneration(); g > 0 {
		return fmt.Sprintf("%s/%s/g%d", u.GetKind(), id, g)
	}
	return fmt.Sprintf("%s/%s/rv%s", u.GetKind(), id, u.GetResourceVersion())
}

// convert turns an admissionregistration.k8s.io (any version) or mutatis.dev
// policy or binding into its admissionregistration.k8s.io/v1 form, converted,
// defaulted and validated by package manifest exactly as for files. Shadow
// objects carry the same schema under another group; their status is the
// controller's own and is dropped.
func convert(u *unstructured.Unstructured) convertedObject {
	obj := make(map[string]any, len(u.Object))
	for k, v := range u.Object {
		obj[k] = v
	}
	delete(obj, "status")
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		return convertedObject{err: err}
	}
	if gv.Group == ShadowGroup {
		obj["apiVersion"] = admissionregistrationv1.SchemeGroupVersion.String()
	}
	js, err := json.Marshal(obj)
	if err != nil {
		return convertedObject{err: err}
	}
	set, err := manifest.Parse(u.GetName(), js)
	if err != nil {
		return convertedObject{err: manifestErrors(err)}
	}
	switch {
	case len(set.Policies) == 1:
		return convertedObject{policy: set.Policies[0].Policy}
	case len(set.Bindings) == 1:
		return convertedObject{binding: set.Bindings[0].Binding}
	}
	return convertedObject{err: fmt.Errorf("%s %s is not a MutatingAdmissionPolicy or binding", u.GetAPIVersion(), u.GetKind())}
}

// manifestErrors drops the file prefix of manifest errors: the object is
// named by the event or condition that carries the message.
func manifestErrors(err error) error {
	var list manifest.ErrorList
	if !errors.As(err, &list) {
		return err
	}
	var lines []string
	for _, e := range list {
		if len(e.Errs) == 0 && e.Err != nil {
			lines = append(lines, e.Err.Error())
		}
		for _, fe := range e.Errs {
			lines = append(lines, fe.Error())
		}
	}
	return errors.New(strings.Join(lines, "; "))
}
