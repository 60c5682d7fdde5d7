package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/mutatis-dev/mutatis/chain"
	"github.com/mutatis-dev/mutatis/cluster"
	"github.com/mutatis-dev/mutatis/internal/jsonvalue"
	"github.com/mutatis-dev/mutatis/jsonpatch"
	"github.com/mutatis-dev/mutatis/matching"
)

// Outcome is what the policies would do to an object.
type Outcome string

// The outcomes, from the gravest.
const (
	// OutcomeError: the request fails before or outside the policies: the
	// object cannot be decoded (400), an admission plugin before the
	// policies refuses it (403), or the evaluation fails.
	OutcomeError Outcome = "error"
	// OutcomeDeny: a policy denies the request (failurePolicy Fail), or
	// the validating stage refuses it after the registry's validation (a
	// ValidatingAdmissionPolicy binding with Deny, PodSecurity enforce, a
	// built-in plugin's validate half: Finding.RefusedBy names it).
	OutcomeDeny Outcome = "deny"
	// OutcomeInvalid: the admitted object is refused by validation (422).
	OutcomeInvalid Outcome = "invalid"
	// OutcomeChange: the policies change the object.
	OutcomeChange Outcome = "change"
	// OutcomeIgnored: the object is left unchanged, but errors were
	// dropped by failurePolicy Ignore.
	OutcomeIgnored Outcome = "ignored"
	// OutcomeUnchanged: the policies leave the object as it is.
	OutcomeUnchanged Outcome = "unchanged"
)

// Outcomes lists the outcomes from the gravest.
var Outcomes = []Outcome{OutcomeError, OutcomeDeny, OutcomeInvalid, OutcomeChange, OutcomeIgnored, OutcomeUnchanged}

// Evaluation is the full outcome of one object.
type Evaluation struct {
	// Request are the attributes of the request, its objects decoded and
	// through the admission plugins before the policies (nil when that
	// failed).
	Request *matching.Attributes
	// Before is the object as the policies receive it.
	Before map[string]any
	// Admission is the simulated cluster's (nil on error).
	Admission *cluster.Admission
	// Outcome sums it up; Message is the refusal's or the error's.
	Outcome Outcome
	Message string
	// Patch is the JSON patch from Before to the admitted object
	// (OutcomeChange).
	Patch []byte
}

// Prepare returns the request's object for op made from obj, an object as
// the API server returns it: for CREATE the object as a client re-creating
// it would send it, without what kube-apiserver sets (uid,
// resourceVersion, creationTimestamp, generation, managedFields, the
// deletion fields, selfLink) and without its status when the resource has
// a status subresource (its registry drops a status sent on create); for
// UPDATE the object itself (the update changes nothing). obj is not
// modified.
func Prepare(obj *unstructured.Unstructured, res matching.Resource, op admission.Operation) *unstructured.Unstructured {
	if op != admission.Create || obj.Object == nil {
		return obj.DeepCopy()
	}
	// The copy leaves out what is dropped rather than copying it first:
	// managedFields are often the larger part of a listed object.
	_, dropStatus := res.Subresource("status")
	out := make(map[string]any, len(obj.Object))
	for k, v := range obj.Object {
		switch {
		case k == "status" && dropStatus:
		case k == "metadata":
			meta, ok := v.(map[string]any)
			if !ok || meta == nil {
				out[k] = runtime.DeepCopyJSONValue(v)
				break
			}
			m := make(map[string]any, len(meta))
			for f, fv := range meta {
				if !slices.Contains(createDropped, f) {
					m[f] = runtime.DeepCopyJSONValue(fv)
				}
			}
			out[k] = m
		default:
			out[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	return &unstructured.Unstructured{Object: out}
}

// createDropped are the metadata fields kube-apiserver sets, which a
// client re-creating an object does not send.
var createDropped = []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"}

// Evaluate runs one object of resource res, as read from the cluster,
// through the admission of the audited operation.
func (a *Auditor) Evaluate(ctx context.Context, res matching.Resource, obj *unstructured.Unstructured) *Evaluation {
	req := cluster.Request{Object: Prepare(obj, res, a.operation), Operation: a.operation, User: a.opts.User}
	if a.operation == admission.Update {
		req.OldObject = obj.DeepCopy()
	}
	ev := &Evaluation{}
	decoded, err := a.sim.DecodeSteps(req)
	if err != nil {
		ev.Outcome, ev.Message = OutcomeError, statusMessage(err)
		return ev
	}
	attrs := decoded.Attributes
	ev.Request, ev.Before = attrs, attrs.Object.Object
	adm, err := a.sim.Admit(ctx, a.chain, decoded)
	if err != nil {
		ev.Outcome, ev.Message = OutcomeError, statusMessage(err)
		return ev
	}
	ev.Admission = adm
	switch {
	case adm.Result.Denied != nil:
		ev.Outcome, ev.Message = OutcomeDeny, adm.Result.Denied.ErrStatus.Message
	case adm.Invalid != nil:
		ev.Outcome, ev.Message = OutcomeInvalid, adm.Invalid.ErrStatus.Message
	case adm.Validation.Denied != nil:
		ev.Outcome, ev.Message = OutcomeDeny, adm.Validation.Denied.ErrStatus.Message
	case adm.Object != nil && !jsonvalue.JSONEqual(ev.Before, adm.Object):
		ev.Outcome = OutcomeChange
		ev.Patch, err = patch(ev.Before, adm.Object)
		if err != nil {
			ev.Outcome, ev.Message = OutcomeError, err.Error()
		}
	case len(adm.Result.Ignored) > 0:
		ev.Outcome = OutcomeIgnored
	default:
		ev.Outcome = OutcomeUnchanged
	}
	return ev
}

// patch is the checked JSON patch that turns before into after (what a
// webhook would answer): jsonpatch.CreatePatch, with before encoded only
// when the patch computed on the decoded values does not check (the
// encoding is for CreatePatch's fallback alone).
func patch(before, after map[string]any) ([]byte, error) {
	if before != nil {
		return jsonpatch.CreatePatch(nil, before, after)
	}
	original, err := jsonvalue.Marshal(before)
	if err != nil {
		return nil, err
	}
	return jsonpatch.CreatePatch(original, nil, after)
}

// statusMessage is the message kube-apiserver would answer with for err.
func statusMessage(err error) string {
	var status *apierrors.StatusError
	if errors.As(err, &status) {
		return status.ErrStatus.Message
	}
	return err.Error()
}

// finding sums the evaluation of obj up for the report.
func (a *Auditor) finding(ctx context.Context, res matching.Resource, obj *unstructured.Unstructured) Finding {
	ev := a.Evaluate(ctx, res, obj)
	f := Finding{
		Resource:  resourceName(res),
		Kind:      obj.GetKind(),
		Namespace: obj.GetNamespace(),
		Name:      obj.GetName(),
		Outcome:   ev.Outcome,
		Message:   ev.Message,
		Patch:     string(ev.Patch),
		Count:     1,
	}
	if ev.Admission != nil && ev.Admission.Validation.Denied != nil && ev.Admission.Result.Denied == nil && ev.Admission.Invalid == nil {
		f.RefusedBy = ev.Admission.Validation.DeniedBy
	}
	if ev.Admission != nil {
		v := ev.Admission.Validation
		f.Warnings = v.Warnings
		for _, val := range v.Validations {
			for _, d := range val.Decisions {
				if d.Action != chain.DecisionDeny {
					continue
				}
				vf := ValidationFailure{Policy: val.Configuration, Binding: val.Hook, Param: val.Param, Message: d.Message, Error: d.Error}
				for _, act := range val.Actions {
					vf.Actions = append(vf.Actions, string(act))
				}
				f.Validations = append(f.Validations, vf)
			}
		}
		f.validations = v.Validations
	}
	if ev.Admission != nil {
		r := ev.Admission.Result
		for _, ig := range r.Ignored {
			f.Ignored = append(f.Ignored, ig.Message)
		}
		f.invocations = r.Invocations
		for _, inv := range r.Invocations {
			if inv.Ran() || inv.Err != nil {
				name := PolicyBinding{Policy: inv.Configuration, Binding: inv.Hook}.String()
				if !slices.Contains(f.Policies, name) {
					f.Policies = append(f.Policies, name)
				}
			}
		}
	}
	if res.Group == "" && res.Resource == "pods" && !a.opts.AllPods {
		if ref := metav1.GetControllerOf(obj); ref != nil {
			f.Owner = fmt.Sprintf("%s/%s", ref.Kind, ref.Name)
		}
	}
	return f
}
